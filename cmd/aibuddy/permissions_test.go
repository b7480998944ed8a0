package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPermissionRulesOverMCP drives `aibuddy mcp` with the permissions
// settings of permissions/testdata/settings.json through the Go SDK client,
// which offers no elicitation (a host that cannot ask), over every command
// form of permissions/testdata/commands.tsv: allowed forms really run;
// ask and deny forms are refused at the Authorization stage naming the
// rule; nothing reaches the loopback listener standing in for
// blocked.test but the one allowed form (git ls-remote .../allowed).
func TestPermissionRulesOverMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	var mu sync.Mutex
	var hits []string
	blocked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer blocked.Close()
	host := strings.TrimPrefix(blocked.URL, "http://")

	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"README.md": "hello\nworld\n", ".env": "API_KEY=abc123\n", "config/.env.local": "K=v\n",
		"secrets/key.txt": "s3cr3t\n", "id_rsa": "-----BEGIN-----\n", "build/keep": "keep\n", "urls.txt": "http://" + host + "/xargs\n",
	} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "permissions", "testdata", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The permission rules are what this test judges, so the confinement
	// leaves the network on: with its default (off) no form could reach
	// the listener, and the control would prove nothing.
	var settings map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "blocked.test", host)), &settings); err != nil {
		t.Fatal(err)
	}
	settings["sandbox"] = map[string]any{"network": "on"}
	doc, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "aibuddy.json")
	if err := os.WriteFile(cfg, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, ws, "--config", cfg)

	f, err := os.Open(filepath.Join(root, "permissions", "testdata", "commands.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("commands.tsv:%d: want three tab-separated columns", n)
		}
		verdict, rule := parts[0], parts[1]
		cmd := strings.NewReplacer("$WS", ws, "blocked.test", host).Replace(parts[2])
		rule = strings.ReplaceAll(rule, "blocked.test", host)
		counts[verdict]++
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": cmd, "timeout_ms": 20000}})
		if err != nil {
			t.Fatalf("commands.tsv:%d %q: protocol error: %v", n, cmd, err)
		}
		out := text(res)
		stage, _ := res.Meta["aibuddy/stage"].(string)
		switch verdict {
		case "allow":
			if res.IsError || !strings.Contains(out, "exit code:") {
				t.Errorf("commands.tsv:%d %q: want it run, got (stage %q) %s", n, cmd, stage, out)
			}
		case "ask", "deny":
			if !res.IsError || !strings.EqualFold(stage, "authorization") {
				t.Errorf("commands.tsv:%d %q: want a refusal at Authorization, got (stage %q) %s", n, cmd, stage, out)
				continue
			}
			if !strings.Contains(out, rule) {
				t.Errorf("commands.tsv:%d %q: the refusal does not name %q: %s", n, cmd, rule, out)
			}
			if verdict == "deny" && !strings.Contains(out, "denied by policy") {
				t.Errorf("commands.tsv:%d %q: want a denial, got %s", n, cmd, out)
			}
			if verdict == "ask" && !strings.Contains(out, "needs a person's confirmation") {
				t.Errorf("commands.tsv:%d %q: want a confirmation refusal, got %s", n, cmd, out)
			}
		default:
			t.Fatalf("commands.tsv:%d: unknown verdict %q", n, verdict)
		}
	}
	total := counts["allow"] + counts["ask"] + counts["deny"]
	if total < 60 {
		t.Errorf("%d command forms, want at least 60", total)
	}
	t.Logf("%d forms through aibuddy mcp: %d ran, %d refused (ask, no elicitation), %d denied", total, counts["allow"], counts["ask"], counts["deny"])

	mu.Lock()
	defer mu.Unlock()
	allowed := 0
	for _, p := range hits {
		if strings.HasPrefix(p, "/allowed") {
			allowed++
			continue
		}
		t.Errorf("a refused command reached the listener for blocked.test: %s", p)
	}
	if allowed == 0 {
		t.Error("the allowed git ls-remote never reached the listener: the control does not hold")
	}
	// Nothing a refused command would have written or removed changed.
	for _, p := range []string{"clobber.txt", "out.txt", "protected/a.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s exists: a refused command ran", p)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "build", "keep")); err != nil {
		t.Errorf("build/keep is gone: a refused rm ran (%v)", err)
	}
}
