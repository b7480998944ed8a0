//go:build linux && !(amd64 || mips64 || mips64le || ppc64 || ppc64le || s390x || arm64 || riscv64 || 386 || arm || mips || mipsle)

package localsandbox

// sysFstatat is 0 where the syscall package names no fstatat(2) that fills
// a syscall.Stat_t: fstatat then opens the entry with O_PATH and fstats it.
const sysFstatat = 0
