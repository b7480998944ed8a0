package mcpclient_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/mcpclient"
)

// TestToolCountsFileRoundTrip: the counts are written 0600 and read back;
// a missing file is empty without error; a file of another shape is empty
// with an error that says to remove it.
func TestToolCountsFileRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), mcpclient.ToolCountsFile)
	if got, err := mcpclient.ReadToolCounts(p); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	want := map[string]int{"github": 41, "memory": 9}
	if err := mcpclient.WriteToolCounts(p, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v %v, want 0600", fi.Mode(), err)
	}
	got, err := mcpclient.ReadToolCounts(p)
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("read back %v %v, want %v", got, err, want)
	}
	merged, changed := mcpclient.MergeCounts(got, map[string]int{"memory": 9})
	if changed || !maps.Equal(merged, want) {
		t.Errorf("merging an unchanged count: %v changed=%v", merged, changed)
	}
	merged, changed = mcpclient.MergeCounts(got, map[string]int{"memory": 10, "fx": 3})
	if !changed || merged["memory"] != 10 || merged["fx"] != 3 || merged["github"] != 41 {
		t.Errorf("merging new counts: %v changed=%v", merged, changed)
	}
	if err := os.WriteFile(p, []byte(`[1,2]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := mcpclient.ReadToolCounts(p); err == nil || len(got) != 0 {
		t.Errorf("a file of another shape: %v %v, want empty and an error", got, err)
	}
}

// TestExpectedCountsServersStillConnecting: with one real server connected
// (2 tools) and one hanging in initialize, Expected names only the hanging
// one, with its last known count or the assumed one, and Counts only the
// connected one.
func TestExpectedCountsServersStillConnecting(t *testing.T) {
	ok := scriptedServer("ok", "normal", `[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]`)
	hang := mcpclient.ServerConfig{Name: "hang", Type: mcpclient.TypeStdio, Command: "sh", Args: []string{"-c", "sleep 3600"}}
	m := mcpclient.Start(context.Background(), []mcpclient.ServerConfig{ok, hang}, &mcpclient.Options{InitTimeout: time.Hour, ShutdownTimeout: time.Second})
	defer m.Close()
	changed := make(chan struct{}, 10)
	defer m.Subscribe(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})()
	for status(t, m, "ok").State == mcpclient.StateConnecting {
		select {
		case <-changed:
		case <-time.After(time.Minute): // a hang guard
			t.Fatal("ok still connecting after a minute")
		}
	}
	if got := m.Expected(nil, 1); !maps.Equal(got, map[string]int{"hang": 1}) {
		t.Errorf("Expected with nothing known: %v, want hang: 1", got)
	}
	if got := m.Expected(map[string]int{"hang": 40, "ok": 7}, 1); !maps.Equal(got, map[string]int{"hang": 40}) {
		t.Errorf("Expected with hang known: %v, want hang: 40", got)
	}
	if got := m.Counts(); !maps.Equal(got, map[string]int{"ok": 2}) {
		t.Errorf("Counts: %v, want ok: 2", got)
	}
}
