package compact_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

const childEnv = "AIBUDDY_COMPACT_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		crashChild(dir, os.Getenv(childEnv+"_ROUND"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild records and compacts large results in a loop, printing
// "compacted N" after each, until it is killed.
func crashChild(dir, round string) {
	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	c, err := compact.New(st, &compact.Options{DataDir: dir})
	if err != nil {
		os.Exit(2)
	}
	rec := result.New(st, nil)
	doc := bigJSON(nil)
	for i := 0; ; i++ {
		id := fmt.Sprintf("crash_%s_%d", round, i)
		rec.Call(context.Background(), "crash", &tool.Call{ID: id, Name: "inventory_list", Input: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`)},
			returning(tool.Text(doc)))
		fmt.Printf("recorded %d\n", i)
		if _, err := c.Compact(context.Background(), &store.Record{ToolCallID: id}); err != nil {
			fmt.Println("compact:", err)
			os.Exit(2)
		}
		fmt.Printf("compacted %d\n", i)
	}
}

// TestKillDuringCompaction kills (SIGKILL) a process that compacts large
// results in a loop, at several points, then reopens the store: every
// record is either the original or compacted whole, offload files are
// whole, and every call is recovered exactly by id.
func TestKillDuringCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	// Kill points: right after a record is final (inside the compaction
	// that follows), or right after a compaction (inside the next call).
	for round, want := range []string{"recorded 1", "compacted 2", "recorded 3", "recorded 2"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", childEnv, round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); line == want {
				break
			} else if !strings.HasPrefix(line, "compacted ") && !strings.HasPrefix(line, "recorded ") {
				t.Fatalf("child: %s", line)
			}
		}
		// The child is now inside its next record-and-compact step.
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}

	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListTask(context.Background(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	doc := bigJSON(t)
	r := &rig{t: t, dir: dir, st: st, view: compact.ViewToolCall(st, dir, nil)}
	var compacted, original, running int
	for _, rec := range recs {
		switch {
		case rec.Outcome == store.OutcomeRunning || rec.Outcome == store.OutcomeInterrupted:
			running++ // killed while the tool "ran": a trace, no output (interrupted once the store reopened)
			continue
		case rec.Compaction == store.CompactionTrim:
			compacted++
			if rec.Pointer != compact.OffloadPath("crash", rec.ToolCallID) {
				t.Errorf("%s: pointer %q", rec.ToolCallID, rec.Pointer)
			}
			off, err := compact.LoadOffload(context.Background(), st, dir, rec.TaskID, rec.Pointer)
			if err != nil {
				t.Fatalf("%s: compacted but offload unreadable: %v", rec.ToolCallID, err)
			}
			if w, _ := result.Decode(off.Output); w.Text() != doc {
				t.Errorf("%s: offload output differs", rec.ToolCallID)
			}
			if m := modelText(t, rec); !strings.HasPrefix(m, "[result of inventory_list") || len(rec.Model) > 4000 {
				t.Errorf("%s: torn compact form", rec.ToolCallID)
			}
		case rec.Compaction == store.CompactionNone:
			original++
			if modelText(t, rec) != doc || rec.Pointer != "" {
				t.Errorf("%s: original record torn", rec.ToolCallID)
			}
		default:
			t.Errorf("%s: compaction %q", rec.ToolCallID, rec.Compaction)
		}
		if got := r.recoverAll(rec.ToolCallID, ""); got != doc {
			t.Errorf("%s: recovered %d bytes, want %d", rec.ToolCallID, len(got), len(doc))
		}
	}
	t.Logf("after 4 kills: %d records: %d compacted, %d original, %d running", len(recs), compacted, original, running)
	if compacted < 6 {
		t.Errorf("only %d compacted records", compacted)
	}
	// No offload file is torn: every .json parses (temporary files may stay).
	_ = filepath.WalkDir(filepath.Join(dir, compact.OffloadDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			if _, err := compact.ReadOffload(dir, strings.TrimPrefix(filepath.ToSlash(p), filepath.ToSlash(dir)+"/")); err != nil {
				t.Errorf("torn offload file %s: %v", p, err)
			}
		}
		return nil
	})
	// A record left original by a kill is compacted on the next pass.
	c, _ := compact.New(st, &compact.Options{DataDir: dir})
	for _, rec := range recs {
		if rec.Outcome != store.OutcomeRunning && rec.Outcome != store.OutcomeInterrupted && rec.Compaction == store.CompactionNone {
			if o, err := c.Compact(context.Background(), rec); err != nil || !o.Replaced {
				t.Errorf("recompact %s: %+v %v", rec.ToolCallID, o, err)
			}
		}
	}
}
