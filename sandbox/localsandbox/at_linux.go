//go:build linux

package localsandbox

import "golang.org/x/sys/unix"

// dirLookupFlags open a directory only to resolve names in it: O_PATH
// needs no read permission and never has an effect on the object.
const dirLookupFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
