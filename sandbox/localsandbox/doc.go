// Package localsandbox is the local-host adapter of sandbox.Sandbox: file
// operations confined to one workspace folder through os.Root (no "..",
// absolute path or symlink reaches outside it), and commands run with
// /bin/sh in their own process group, stopped as a whole tree on timeout or
// cancellation.
package localsandbox
