package confineinit

// sysSeccomp is seccomp(2) on amd64.
const sysSeccomp = 317
