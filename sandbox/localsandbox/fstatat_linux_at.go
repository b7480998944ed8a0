//go:build linux && (arm64 || riscv64)

package localsandbox

import "syscall"

// sysFstatat is the fstatat(2) system call that fills a syscall.Stat_t here.
const sysFstatat = syscall.SYS_FSTATAT
