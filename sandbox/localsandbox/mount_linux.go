//go:build linux

package localsandbox

import "golang.org/x/sys/unix"

// sameMount reports whether the directory rel (workspace-relative) is on
// the mount the workspace root is on. It asks statx(2) for the mount id
// with AT_STATX_DONT_SYNC, which the kernel answers from its own records:
// nothing is asked of the mounted filesystem, so a hung network or FUSE
// mount answers too. Where statx cannot tell, it reports true.
func (s *Sandbox) sameMount(rel string) bool {
	const flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_DONT_SYNC | unix.AT_NO_AUTOMOUNT
	var root, st unix.Statx_t
	if unix.Statx(s.rootFd, ".", flags, unix.STATX_MNT_ID, &root) != nil || root.Mask&unix.STATX_MNT_ID == 0 {
		return true
	}
	if unix.Statx(s.rootFd, rel, flags, unix.STATX_MNT_ID, &st) != nil || st.Mask&unix.STATX_MNT_ID == 0 {
		return true
	}
	return st.Mnt_id == root.Mnt_id
}
