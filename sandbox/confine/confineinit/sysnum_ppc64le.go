package confineinit

// sysSeccomp is seccomp(2) on ppc64le.
const sysSeccomp = 358
