//go:build race

package main_test

// raceEnabled: this test binary is a race build, so the aibuddy binary the
// tests run is built with -race too.
const raceEnabled = true
