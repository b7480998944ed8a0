package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// dataRetention: at start-up, a task whose last call is older than the
// retention loses its records, outputs and offloaded calls together; a
// recent task keeps all of them; stray old entries go too.
func TestDataRetentionPrunesOldTasks(t *testing.T) {
	data := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	old, now := time.Now().Add(-10*24*time.Hour), time.Now()
	for _, r := range []*store.Record{
		{ToolCallID: "call_old", TaskID: "mcp-old", Tool: "execute", StartedAt: old, EndedAt: old},
		{ToolCallID: "call_new", TaskID: "mcp-new", Tool: "execute", StartedAt: now, EndedAt: now},
	} {
		r.Stage, r.Outcome = "", store.OutcomeOK
		if err := st.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	write := func(rel string, mtime time.Time) string {
		p := filepath.Join(data, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
		return p
	}
	gone := []string{
		write("outputs/mcp-old/call_old.log", now), // its task is old: goes whatever the file's time
		write("compacted_outputs/mcp-old/call_old.json", now),
		write("outputs/execute-legacy.log", old), // a stray old entry
	}
	kept := []string{
		write("outputs/mcp-new/call_new.log", now),
		write("compacted_outputs/mcp-new/call_new.json", now),
	}
	cfg := writeConfig(t, `{"dataRetention": "168h"}`)
	code, _, errs := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--data-dir", data, "--workspace", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s survived the retention", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was pruned: %v", p, err)
		}
	}
	// The scan ran and is not repeated within a day: an entry made old now
	// stays until then.
	if _, err := os.Stat(filepath.Join(data, ".retention-checked")); err != nil {
		t.Errorf("no retention stamp: %v", err)
	}
	stray := write("outputs/execute-legacy2.log", old)
	if code, _, errs := runCLI(t, cli.Options{}, "tools", "--config", cfg, "--data-dir", data, "--workspace", t.TempDir()); code != 0 {
		t.Fatalf("second start: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("a second start within a day scanned again: %v", err)
	}
	st, err = sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Get(context.Background(), "call_old"); err == nil {
		t.Error("the old task's record survived")
	}
	if _, err := st.Get(context.Background(), "call_new"); err != nil {
		t.Errorf("the recent record was pruned: %v", err)
	}
}
