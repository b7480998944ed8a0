//go:build unix && !linux

package localsandbox

import "golang.org/x/sys/unix"

// dirLookupFlags open a directory to resolve names in it.
const dirLookupFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
