package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
)

// records is a slog.Handler that keeps every record with its attributes
// as text ("key=value").
type records struct {
	mu   sync.Mutex
	recs []logged
}

type logged struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	l := logged{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, l)
	r.mu.Unlock()
	return nil
}

func (r *records) warnings() []logged {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logged
	for _, l := range r.recs {
		if l.level >= slog.LevelWarn {
			out = append(out, l)
		}
	}
	return out
}

// TestLossySchemaIsLoggedWithServerAndTool is case BH-031: an MCP tool
// whose schema has a root-level allOf with if/then is sent without it (the
// constraint moved into the description) and a warning names the server
// and tool: the tool's provider-facing name is "<server>__<tool>"
// (mcpclient's namespacing), here "shapes__resize". It is logged once per
// tool and schema, not on every step.
func TestLossySchemaIsLoggedWithServerAndTool(t *testing.T) {
	api := &fakeAPI{t: t, responses: []response{{200, finalText}, {200, finalText}}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	log := &records{}
	m := anthropicmodel.New(anthropicmodel.Options{APIKey: "test-key", BaseURL: srv.URL, Model: "claude-sonnet-4-5",
		MaxTokens: 1024, Strategy: provider.ActiveTools, MaxRetries: -1, Logger: slog.New(log)})
	req := &provider.Request{
		Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "resize it"}}}},
		Tools:    []provider.Tool{{Name: "shapes__resize", Description: "Resize.", InputSchema: json.RawMessage(resizeSchema)}},
	}
	if _, err := collect(t, m, req); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(api.bodies[0], "allOf") || !strings.Contains(api.bodies[0], "size ≤ 64 when mode=quick") {
		t.Fatalf("the tool was not sent with the constraint rewritten: %s", api.bodies[0])
	}
	ws := log.warnings()
	if len(ws) == 0 {
		t.Fatal("no warning for a schema that lost its top-level if/then")
	}
	for _, w := range ws {
		if w.attrs["tool"] != "shapes__resize" {
			t.Errorf("the warning does not name server shapes and tool resize: %+v", w)
		}
		if !strings.Contains(w.msg, "Anthropic") || w.attrs["change"] == "" {
			t.Errorf("the warning does not say what changed: %+v", w)
		}
	}
	if !slices.ContainsFunc(ws, func(w logged) bool { return strings.Contains(w.attrs["change"], "if/then/else") }) {
		t.Errorf("no warning about the dropped if/then: %+v", ws)
	}
	// The second step sends the same schema: nothing more is logged.
	if _, err := collect(t, m, req); err != nil {
		t.Fatal(err)
	}
	if got := len(log.warnings()); got != len(ws) {
		t.Errorf("%d warnings after the second step, want still %d", got, len(ws))
	}
}
