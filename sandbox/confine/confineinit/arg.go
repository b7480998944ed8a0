package confineinit

// Arg is the first argument with which the driver re-executes the running
// binary as the sandbox's init. The init function of this package
// recognizes it, only in a process that is PID 1 of its namespace (Linux).
const Arg = "__aibuddy-confine-init"
