package mcpclient_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// The three reference servers pinned in package-lock.json (version
// 2026.8.31 of each), started together. The counts are what these pinned
// versions really offer; issue 5 names the same numbers (memory 9,
// everything 13, filesystem 14).
func TestReferenceServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Node.js servers")
	}
	bin := nodeBin(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	servers, err := mcpclient.ParseServersWith(map[string]json.RawMessage{
		"memory":     json.RawMessage(`{"command":"${BIN}/mcp-server-memory","env":{"MEMORY_FILE_PATH":"${DIR}/memory.jsonl"}}`),
		"everything": json.RawMessage(`{"command":"${BIN}/mcp-server-everything","env":{"AIBUDDY_PROBE":"42"}}`),
		"filesystem": json.RawMessage(`{"command":"${BIN}/mcp-server-filesystem","args":["${ROOT}"]}`),
	}, func(k string) (string, bool) {
		v, ok := map[string]string{"BIN": bin, "DIR": dir, "ROOT": root}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	m := connect(t, &mcpclient.Options{InitTimeout: 20 * time.Second}, servers...)
	want := map[string]int{"memory": 9, "everything": 13, "filesystem": 14}
	for _, s := range m.Servers() {
		if s.State != mcpclient.StateConnected {
			t.Fatalf("%s: %s (stderr: %s)", s.Name, s.Summary(), s.StderrTail)
		}
		if s.ToolsOffered != want[s.Name] || s.ToolsLoaded != want[s.Name] {
			var names []string
			for _, tl := range m.Tools()[s.Name] {
				names = append(names, tl.Name())
			}
			sort.Strings(names)
			t.Errorf("%s: %s, want %d; tools %v; quarantined %v", s.Name, s.Summary(), want[s.Name], names, s.Quarantined)
		}
		t.Logf("%s (%s): %s in %v", s.Name, s.ServerInfo, s.Summary(), s.Elapsed.Round(time.Millisecond))
	}
	ctx := context.Background()
	run := func(name, input string) *tool.Result {
		t.Helper()
		r := m.Call(ctx, &tool.Call{ID: name, Name: name, Input: json.RawMessage(input)})
		if r.IsError {
			t.Fatalf("%s: %s", name, r.AllText())
		}
		return r
	}

	// memory: the entity is stored and found again.
	run("memory__create_entities", `{"entities":[{"name":"aibuddy","entityType":"project","observations":["written in Go"]}]}`)
	if r := run("memory__search_nodes", `{"query":"aibuddy"}`); !strings.Contains(r.AllText(), "written in Go") {
		t.Errorf("search_nodes: %s", r.AllText())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory.jsonl")); err != nil || !strings.Contains(string(b), "aibuddy") {
		t.Errorf("memory file: %q, %v", b, err)
	}

	// everything: echo comes back.
	if r := run("everything__echo", `{"message":"round trip"}`); !strings.Contains(r.AllText(), "round trip") {
		t.Errorf("echo: %s", r.AllText())
	}
	// The server's environment is ours plus the configured entries.
	if r := run("everything__get-env", `{}`); !strings.Contains(r.AllText(), `"AIBUDDY_PROBE": "42"`) || !strings.Contains(r.AllText(), `"PATH"`) {
		t.Errorf("get-env lacks the configured or the host variables: %.300s", r.AllText())
	}
	// Progress notifications reach the call's client events.
	var (
		mu       sync.Mutex
		progress []tool.Event
	)
	r := m.Call(ctx, &tool.Call{Name: "everything__trigger-long-running-operation", Input: json.RawMessage(`{"duration":0.3,"steps":3}`),
		Events: func(e tool.Event) { mu.Lock(); progress = append(progress, e); mu.Unlock() }})
	mu.Lock()
	defer mu.Unlock()
	// The last notification may race the response and is then dropped (the
	// call is over), so at least the first ones must arrive.
	if r.IsError || len(progress) < 1 || progress[0].Progress != 1 || progress[0].Total != 3 {
		t.Errorf("long-running operation: %s; progress %+v", r.AllText(), progress)
	}
	// Local validation happens before the server sees anything.
	if r := m.Call(ctx, &tool.Call{Name: "everything__echo", Input: json.RawMessage(`{}`)}); !r.IsError || r.Stage != tool.Parameters {
		t.Errorf("echo without message: %+v", r)
	}

	// filesystem: the file is written on disk and read back.
	path := filepath.Join(root, "note.txt")
	run("filesystem__write_file", `{"path":`+quote(path)+`,"content":"hello from mcpclient"}`)
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello from mcpclient" {
		t.Errorf("file on disk: %q, %v", b, err)
	}
	if r := run("filesystem__read_text_file", `{"path":`+quote(path)+`}`); !strings.Contains(r.AllText(), "hello from mcpclient") {
		t.Errorf("read_text_file: %s", r.AllText())
	}
	// The server's own refusal is an Execution-stage error result.
	if r := m.Call(ctx, &tool.Call{Name: "filesystem__read_text_file", Input: json.RawMessage(`{"path":"/etc/passwd"}`)}); !r.IsError || r.Stage != tool.Execution {
		t.Errorf("read outside the allowed directory: %+v", r)
	}
	// Annotations come through (filesystem marks read_text_file read-only).
	for _, tl := range m.Tools()["filesystem"] {
		if tl.Name() == "filesystem__read_text_file" {
			if a := tl.Annotations(); a == nil || !a.ReadOnlyHint {
				t.Errorf("read_text_file annotations: %+v", a)
			}
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
