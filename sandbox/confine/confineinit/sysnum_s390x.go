package confineinit

// sysSeccomp is seccomp(2) on s390x.
const sysSeccomp = 348
