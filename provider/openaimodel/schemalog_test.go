package openaimodel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// records is a slog.Handler that keeps every record with its attributes
// as text.
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

// BH-031's schema: a root-level allOf with if/then.
const resizeSchema = `{"type":"object",
 "properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
 "required":["mode"],
 "allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}`

// TestLossySchemaIsLoggedWithServerAndTool is case BH-031 on the Responses
// API: the tool is sent with the conditional rewritten into the
// description, and a warning names the server and tool (the provider-facing
// name "<server>__<tool>", here "shapes__resize"), once per tool and schema.
func TestLossySchemaIsLoggedWithServerAndTool(t *testing.T) {
	s := &server{t: t, replay: []string{textStream, textStream}}
	log := &records{}
	m := newModel(t, s, openaimodel.Options{Strategy: provider.ActiveTools, Logger: slog.New(log)})
	req := &provider.Request{
		Messages: []provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: "resize it"}}}},
		Tools:    []provider.Tool{{Name: "shapes__resize", Description: "Resize.", InputSchema: json.RawMessage(resizeSchema)}},
	}
	collect(t, m, req)
	if body := string(s.bodies[0]); strings.Contains(body, "allOf") || !strings.Contains(body, "size ≤ 64 when mode=quick") {
		t.Fatalf("the tool was not sent with the constraint rewritten: %s", body)
	}
	ws := log.warnings()
	if len(ws) == 0 {
		t.Fatal("no warning for a schema that lost its top-level if/then")
	}
	for _, w := range ws {
		if w.attrs["tool"] != "shapes__resize" {
			t.Errorf("the warning does not name server shapes and tool resize: %+v", w)
		}
		if !strings.Contains(w.msg, "with loss") || w.attrs["note"] == "" {
			t.Errorf("the warning does not say what changed: %+v", w)
		}
	}
	if !slices.ContainsFunc(ws, func(w logged) bool { return strings.Contains(w.attrs["note"], "if/then/else") }) {
		t.Errorf("no warning about the dropped if/then: %+v", ws)
	}
	collect(t, m, req)
	if got := len(log.warnings()); got != len(ws) {
		t.Errorf("%d warnings after the second step, want still %d", got, len(ws))
	}
}
