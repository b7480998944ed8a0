//go:build !linux

package sandboxtest

import "testing"

// Swapper exchanges two names in a loop; only linux has
// renameat2(RENAME_EXCHANGE), so elsewhere StartSwapper skips.
type Swapper struct{}

// StartSwapper skips t: the atomic exchange of two names is linux-only.
func StartSwapper(t testing.TB, a, b string, repair func()) *Swapper {
	t.Helper()
	t.Skip("renameat2(RENAME_EXCHANGE) is linux-only; the race tests need it")
	return nil
}

// Stop returns 0.
func (s *Swapper) Stop() int64 { return 0 }

// Swaps returns 0.
func (s *Swapper) Swaps() int64 { return 0 }
