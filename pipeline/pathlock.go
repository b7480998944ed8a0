package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aibuddy/aibuddy/tool"
)

// PathKey is the key the per-path write lock gives path p: inside root
// when root is set (a relative p joined to it, the symbolic links of the
// longest existing prefix resolved), else p cleaned. So "nums.txt",
// "./nums.txt" and root/nums.txt are one key (case BH-074: "keyed on the
// resolved path inside the workspace root").
func PathKey(root, p string) string {
	if root == "" {
		return filepath.Clean(p)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// pathLocks serializes the calls that write one file (tool.Access kind
// Edit: write_file, edit_file) across every run the pipeline serves: two
// MCP sessions, or a host's parallel calls, never edit one file at once
// (BH-074, lost updates). A call waits its turn before Execution and holds
// the lock through Verification, so its read-back sees its own write.
type pathLocks struct {
	root string
	mu   sync.Mutex
	held map[string]*pathLock
}

type pathLock struct {
	token chan struct{} // holds one value while the lock is held
	refs  int           // holders and waiters
}

// acquire takes the locks of keys (sorted, so two calls never wait for
// each other) and returns their release; ctx ending first returns its
// error with nothing held.
func (l *pathLocks) acquire(ctx context.Context, keys []string) (func(), error) {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var got []string
	release := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, k := range got {
			lk := l.held[k]
			<-lk.token
			l.drop(k, lk)
		}
	}
	for _, k := range keys {
		l.mu.Lock()
		lk := l.held[k]
		if lk == nil {
			lk = &pathLock{token: make(chan struct{}, 1)}
			l.held[k] = lk
		}
		lk.refs++
		l.mu.Unlock()
		select {
		case lk.token <- struct{}{}:
			got = append(got, k)
		case <-ctx.Done():
			l.mu.Lock()
			l.drop(k, lk)
			l.mu.Unlock()
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// drop ends one holder's or waiter's interest in k; l.mu is held.
func (l *pathLocks) drop(k string, lk *pathLock) {
	if lk.refs--; lk.refs == 0 {
		delete(l.held, k)
	}
}

// pathLock is the stage that makes a call writing files wait for the
// other calls writing any of them (after Authorization: nobody waits on a
// person's answer to another call).
func (p *Pipeline) pathLock(next Handler) Handler {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		t, ok := stateOf(ctx).lookup(call.Name)
		if !ok {
			return next(ctx, call)
		}
		acc, err := t.Access(call.Input)
		if err != nil || acc.Kind != tool.AccessEdit || len(acc.Paths) == 0 {
			return next(ctx, call)
		}
		keys := make([]string, len(acc.Paths))
		for i, path := range acc.Paths {
			keys[i] = PathKey(p.locks.root, path)
		}
		release, err := p.locks.acquire(ctx, keys)
		if err != nil {
			return tool.ErrorResult(tool.Errorf(tool.Execution, "not run: cancelled while another call was writing %s (%v)",
				strings.Join(acc.Paths, ", "), err).WithHint("nothing was written; run it again if it is still needed"), call.Name)
		}
		defer release()
		return next(ctx, call)
	}
}
