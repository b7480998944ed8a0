package confineinit

// sysSeccomp is seccomp(2) on riscv64.
const sysSeccomp = 277
