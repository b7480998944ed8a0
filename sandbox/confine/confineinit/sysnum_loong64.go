package confineinit

// sysSeccomp is seccomp(2) on loong64.
const sysSeccomp = 277
