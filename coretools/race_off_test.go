//go:build !race

package coretools

const raceEnabled = false
