//go:build linux && !amd64 && !arm64 && !riscv64 && !ppc64le && !s390x && !loong64

package confineinit

// sysSeccomp is unknown here: the filter is installed with prctl.
const sysSeccomp = -1
