package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/config"
)

func TestLoadFullFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aibuddy.json")
	doc := `{
	  "toolKeys": ["filesystem", "execute"],
	  "sandbox": {"kind": "local", "workspace": "proj", "killDelay": "500ms", "drainGrace": 250},
	  "limits": {"execMaxOutputChars": 5000, "execGrace": "10s", "execHeartbeat": 1500, "lsMaxEntries": 10,
	             "execMaxOutputFileBytes": 1048576},
	  "mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}
	}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.ExecGrace.D() != 10*time.Second || c.Limits.ExecHeartbeat.D() != 1500*time.Millisecond {
		t.Errorf("durations: %v %v", c.Limits.ExecGrace.D(), c.Limits.ExecHeartbeat.D())
	}
	if c.Sandbox.KillDelay.D() != 500*time.Millisecond || c.Sandbox.DrainGrace.D() != 250*time.Millisecond ||
		c.Limits.ExecMaxOutputFileBytes != 1<<20 {
		t.Errorf("sandbox %+v, execMaxOutputFileBytes %d", c.Sandbox, c.Limits.ExecMaxOutputFileBytes)
	}
	if c.Limits.ExecMaxOutputChars != 5000 || c.Sandbox.Workspace != "proj" || len(c.MCPServers) != 1 {
		t.Errorf("decoded %+v", c)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		`{"toolKey": ["filesystem"]}`:                                                                                 `unknown key "toolKey"`,
		`{"limits": {"lsMaxEntries": "many"}}`:                                                                        `key "limits.lsMaxEntries": string value where int is expected`,
		`{"limits": {"execGrace": "soon"}}`:                                                                           `duration "soon"`,
		`{"limits": {"readMaxLines": -1}}`:                                                                            `negative values for limits.readMaxLines`,
		"{\n  \"sandbox\": {\"kind\": \"local\",}\n}":                                                                 `malformed JSON at line 2, column`,
		`{"toolKeys": [""]}`:                                                                                          `toolKeys[0] is empty`,
		`{"limits": {"execDefaultTimeout": "20m"}}`:                                                                   `limits.execDefaultTimeout (20m0s) exceeds limits.execMaxTimeout (unset, so its default 10m0s)`,
		`{"limits": {"execDefaultTimeout": "10m"}}`:                                                                   ``, // the default maximum itself is fine
		`{"limits": {"execDefaultTimeout": "20m", "execMaxTimeout": "30m"}}`:                                          ``,
		`{"sandbox": {"killDelay": "-1s"}, "limits": {"execMaxOutputFileBytes": -1}}`:                                 `negative values for limits.execMaxOutputFileBytes, sandbox.killDelay`,
		`{"sandbox": {"drainGrace": -5}}`:                                                                             `negative values for sandbox.drainGrace`,
		`{"limits": {"execDefaultTimeout": "20m", "execMaxTimeout": "1m"}}`:                                           `exceeds limits.execMaxTimeout`,
		`{"agent": {"contextBudgetTokens": -5}}`:                                                                      `negative values for agent.contextBudgetTokens`,
		`{"agent": {"contextBudgetTokens": 60000}}`:                                                                   ``,
		`{"limits": {"resultMaxChars": -5}}`:                                                                          `negative values for limits.resultMaxChars`,
		`{"limits": {"resultMaxChars": 50000}}`:                                                                       ``,
		`{"limits": {"dataDirMaxBytes": -1}}`:                                                                         `negative values for limits.dataDirMaxBytes`,
		`{"limits": {"execEnv": ["GOPATH", "CI=0", "-DEBIAN_FRONTEND", "X="]}}`:                                       ``,
		`{"limits": {"execEnv": ["GOPATH", "-CI=1"]}}`:                                                                `limits.execEnv[1]: "-CI=1": -NAME removes a variable and takes no value`,
		`{"limits": {"execEnv": ["=1"]}}`:                                                                             `limits.execEnv[0]: "=1": no variable name`,
		`{"limits": {"execEnv": ["MY VAR"]}}`:                                                                         `"MY VAR" is not a variable name`,
		`{"mcp": {"sessionIdleTimeout": "-1s"}}`:                                                                      `negative values for mcp.sessionIdleTimeout`,
		`{"mcp": {"httpBodyTimeout": -1, "httpMaxBodyBytes": -1}}`:                                                    `negative values for mcp.httpBodyTimeout, mcp.httpMaxBodyBytes`,
		`{"mcp": {"sessionIdleTimeout": "5m", "httpHeaderTimeout": "2s"}}`:                                            ``,
		`{"mcp": {"oauth": {"issuer": "https://auth.example.com"}}}`:                                                  `mcp.oauth.resource is required with mcp.oauth.issuer`,
		`{"mcp": {"oauth": {"resource": "https://tools.example.com/mcp"}}}`:                                           `mcp.oauth: issuer is not set`,
		`{"mcp": {"oauth": {"issuer": "https://a.example", "resource": "https://t.example/mcp", "scopes": ["mcp"]}}}`: ``,
	}
	for doc, want := range cases {
		_, err := config.Parse([]byte(doc))
		if want == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", doc, err)
			}
			continue
		}
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an ErrInvalid containing %q", doc, err, want)
		}
	}
}

// The agent's parallel-call keys: an omitted serialTools stays nil (the
// agent's default, ask_user_question), [] is an empty list (none); bad
// values name the key.
func TestAgentParallelKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"agent": {"maxParallelCalls": 2, "parallelTools": ["fx__*", "execute"], "serialTools": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Agent; a.MaxParallelCalls != 2 || len(a.ParallelTools) != 2 || a.SerialTools == nil || len(a.SerialTools) != 0 {
		t.Errorf("agent: %+v", a)
	}
	c, err = config.Parse([]byte(`{"agent": {}}`))
	if err != nil || c.Agent.SerialTools != nil || c.Agent.MaxParallelCalls != 0 {
		t.Errorf("defaults: %+v %v", c.Agent, err)
	}
	for doc, want := range map[string]string{
		`{"agent": {"maxParallelCalls": -1}}`:      `negative values for agent.maxParallelCalls`,
		`{"agent": {"parallelTools": ["fx__[a"]}}`: `agent.parallelTools[0] "fx__[a" is not a tool name or glob pattern`,
		`{"agent": {"serialTools": [""]}}`:         `agent.serialTools[0] "" is not a tool name`,
	} {
		if _, err := config.Parse([]byte(doc)); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an ErrInvalid containing %q", doc, err, want)
		}
	}
}
