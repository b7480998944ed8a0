// Package localsandbox is the local-host adapter of sandbox.Sandbox: file
// operations confined to one workspace folder, and commands run with
// /bin/sh in their own process group, stopped as a whole tree on timeout or
// cancellation.
//
// Every file operation finds its object with one path walk (confine.go):
// one component at a time relative to the directory opened for the one
// before, starting at the root's descriptor, with openat(2) and
// O_NOFOLLOW, so the kernel never follows a link; the walk reads each link
// itself and follows it only inside the workspace. What it opens is
// exactly the object at the real path it reports, and the request's
// sandbox.Deny judges that real path before any byte is read or written
// (issue 11: a name swapped for a link to .env between a check and the
// open is refused, not read). A FIFO, socket or device is refused after an
// fstatat, unopened, and the final open is O_NONBLOCK, so nothing swapped
// in can block a call. The walk is linear in the depth of the path and
// bounded (Options.MaxPathDepth, MaxPathBytes); Read reads and hashes at
// most Options.MaxReadBytes of a file.
package localsandbox
