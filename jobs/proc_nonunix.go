//go:build !unix

package jobs

func procStart(pid int) string       { return "" }
func pidAlive(pid int) bool          { return true }
func MarkedPIDs(marker string) []int { return nil }
