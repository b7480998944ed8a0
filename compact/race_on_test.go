//go:build race

package compact_test

// raceEnabled: the race detector makes sync.Pool drop items, so allocation
// bounds do not hold in race builds.
const raceEnabled = true
