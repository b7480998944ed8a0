//go:build linux

package sandboxtest

import (
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Swapper exchanges two names in a loop with renameat2(RENAME_EXCHANGE),
// atomically, as another process racing the file tools would: at any moment
// each name is one of the two objects, never missing. It is the real
// swapper of the race tests (issue 11): a call that checks one name and
// then opens it again meets the other object about half the time.
type Swapper struct {
	a, b    string
	repair  func()
	stop    atomic.Bool
	done    chan struct{}
	swaps   atomic.Int64
	failed  atomic.Int64
	stopped sync.Once
}

// StartSwapper starts exchanging the absolute paths a and b until Stop (or
// the end of t). repair, when set, runs in the swapper's goroutine every
// 64 exchanges, so that a test can put back an object a call legitimately
// replaced (a write_file that renamed a regular file over a link). A host
// whose kernel or filesystem lacks RENAME_EXCHANGE skips t with the
// reason.
func StartSwapper(t testing.TB, a, b string, repair func()) *Swapper {
	t.Helper()
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2(RENAME_EXCHANGE) of %s and %s: %v (the race tests need it)", a, b, err)
	}
	s := &Swapper{a: a, b: b, repair: repair, done: make(chan struct{})}
	go s.loop()
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *Swapper) loop() {
	defer close(s.done)
	for i := 0; !s.stop.Load(); i++ {
		if err := unix.Renameat2(unix.AT_FDCWD, s.a, unix.AT_FDCWD, s.b, unix.RENAME_EXCHANGE); err != nil {
			s.failed.Add(1) // a name was missing for a moment (a call renamed over it)
		} else {
			s.swaps.Add(1)
		}
		if s.repair != nil && i%64 == 0 {
			s.repair()
		}
	}
}

// Stop ends the loop, waits for it and returns the exchanges done.
func (s *Swapper) Stop() int64 {
	s.stopped.Do(func() {
		s.stop.Store(true)
		<-s.done
	})
	return s.swaps.Load()
}

// Swaps is the number of exchanges so far.
func (s *Swapper) Swaps() int64 { return s.swaps.Load() }
