package localsandbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Issue 10, item 6: concurrent reads, writes and edits of one file, from
// two sandboxes (two processes' worth of locks) while other goroutines
// replace it (rename over), remove it, turn it into a symlink or a
// directory between the steps of those calls. No call may fail with a bare
// system error such as "invalid argument" (readlinkat on a link that was
// replaced by a file returned EINVAL, 9 to 100 times in 1,000 calls):
// every error is one of the sentinels that name what happened, and one
// that happened mid-call is sandbox.ErrChanged with the step it hit.
func TestConcurrentCallsOnAChangingFileNameWhatHappened(t *testing.T) {
	ws := t.TempDir()
	sbs := []sandbox.Sandbox{open(t, ws, nil), open(t, ws, nil)}
	f := filepath.Join(ws, "f.txt")
	os.WriteFile(f, []byte("alpha\nbeta\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "g.txt"), []byte("alpha\n"), 0o644)

	var done atomic.Bool
	var mutators sync.WaitGroup
	for g := range 2 {
		mutators.Add(1)
		go func() {
			defer mutators.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			tmp := filepath.Join(ws, fmt.Sprintf("m%d", g))
			for !done.Load() {
				switch rng.IntN(8) {
				case 0: // replaced by a new file
					os.WriteFile(tmp, []byte("alpha\nbeta\n"), 0o644)
					os.Rename(tmp, f)
				case 1: // replaced by a symlink (inside the workspace)
					os.Symlink("g.txt", tmp)
					os.Rename(tmp, f)
				case 2: // removed
					os.Remove(f)
				case 3: // replaced by a directory, briefly
					os.Remove(f)
					os.Mkdir(f, 0o755)
					os.Remove(f)
				case 4: // replaced by a new file after a removal
					os.Remove(f)
					os.WriteFile(f, []byte("alpha\n"), 0o644)
				default: // replaced by a symlink, then by a file again
					os.Symlink("g.txt", tmp)
					os.Rename(tmp, f)
					os.WriteFile(tmp, []byte("alpha\nbeta\n"), 0o644)
					os.Rename(tmp, f)
				}
			}
		}()
	}

	type outcome struct {
		calls int
		errs  map[string]int
		bad   []string
	}
	var mu sync.Mutex
	out := outcome{errs: map[string]int{}}
	var workers sync.WaitGroup
	for g := range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for i := range 1000 {
				sb := sbs[rng.IntN(2)]
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = sb.Read(context.Background(), sandbox.ReadRequest{Path: "f.txt"})
				case 1:
					_, err = sb.Write(context.Background(), sandbox.WriteRequest{Path: "f.txt", Content: fmt.Appendf(nil, "alpha\nbeta %d\n", i)})
				case 2:
					_, err = sb.Edit(context.Background(), sandbox.EditRequest{Path: "f.txt", Edits: []sandbox.Replacement{{Old: "alpha", New: "alpha!"}}})
				}
				mu.Lock()
				out.calls++
				if err != nil {
					out.errs[err.Error()]++
					if msg := named(err); msg != "" {
						out.bad = append(out.bad, msg)
					}
				}
				mu.Unlock()
			}
		}()
	}
	workers.Wait()
	done.Store(true)
	mutators.Wait()

	var keys []string
	for k := range out.errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%5d %s", out.errs[k], k)
	}
	t.Logf("%d calls", out.calls)
	for _, b := range out.bad {
		t.Error(b)
	}
	for k := range out.errs {
		if strings.Contains(k, "invalid argument") {
			t.Errorf("bare EINVAL: %s", k)
		}
	}
}

// named returns "" when err is one of the errors that name what happened
// to the file, or a description of what is wrong with it.
func named(err error) string {
	var ee *sandbox.EditError
	if errors.As(err, &ee) && errors.Is(err, sandbox.ErrNoMatch) {
		return "" // the content was replaced between calls: a plain no-match
	}
	var pe *sandbox.PathError
	if !errors.As(err, &pe) {
		return "not a *sandbox.PathError: " + err.Error()
	}
	var errno syscall.Errno
	if errors.As(pe.Err, &errno) {
		return "a bare system error: " + err.Error()
	}
	switch {
	case errors.Is(err, sandbox.ErrChanged):
		if !strings.Contains(pe.Reason, "while it was being") && !strings.Contains(pe.Reason, "right after it was") && !strings.Contains(pe.Reason, "kept being replaced") {
			return "ErrChanged without the step: " + err.Error()
		}
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, sandbox.ErrIsDir), errors.Is(err, sandbox.ErrStale),
		errors.Is(err, sandbox.ErrNoMatch):
	default:
		return "not a named outcome: " + err.Error()
	}
	return ""
}
