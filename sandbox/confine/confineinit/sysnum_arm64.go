package confineinit

// sysSeccomp is seccomp(2) on arm64.
const sysSeccomp = 277
