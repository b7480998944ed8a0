//go:build linux && (amd64 || mips64 || mips64le || ppc64 || ppc64le || s390x)

package localsandbox

import "syscall"

// sysFstatat is the fstatat(2) system call that fills a syscall.Stat_t here.
const sysFstatat = syscall.SYS_NEWFSTATAT
