// Package benchbin builds the aibuddy binary a benchmark runs as a process,
// one way for every bench under bench/ (they measure the binary a user
// runs, not the code in-process).
package benchbin
