package cli_test

import (
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/internal/cli"
	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// compaction.viewMaxChars reaches view_tool_call: its description and
// schema state the configured bound.
func TestCompactionViewSettingsReachViewToolCall(t *testing.T) {
	cfg := &config.Config{Compaction: config.Compaction{ViewMaxChars: 1234, ViewMaxTokens: 300}}
	dir := t.TempDir()
	reg := cli.BuiltinRegistry(cfg, dir, nil)
	g, ok := reg.Group(compact.GroupKey)
	if !ok {
		t.Fatal("no records group")
	}
	st, err := sqlitestore.Open(dir+"/calls.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tools, err := g.Build(registry.Env{Services: map[string]any{compact.GroupKey: store.Store(st)}})
	if err != nil || len(tools) != 1 {
		t.Fatal(tools, err)
	}
	if !strings.Contains(tools[0].Description(), "at most 1,234 characters") || !strings.Contains(string(tools[0].InputSchema()), "maximum 1234") {
		t.Fatalf("%s\n%s", tools[0].Description(), tools[0].InputSchema())
	}
}
