//go:build race

package coretools

// raceEnabled: the race detector slows the byte-by-byte normalizer about
// twentyfold, so the memory-bound test feeds less (still many times every
// bound).
const raceEnabled = true
