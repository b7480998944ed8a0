package compact_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// recordingSummarizer keeps the requests it got and answers with text.
type recordingSummarizer struct {
	mu   sync.Mutex
	reqs []compact.SummaryRequest
	text string
	err  error
}

func (r *recordingSummarizer) Summarize(_ context.Context, req *compact.SummaryRequest) (*compact.Summary, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	return &compact.Summary{Text: r.text, Model: "mini-1", Via: "openai"}, nil
}

// summarizeOnce records one fetch call of doc under a Summarize strategy
// and returns its record and outcome.
func summarizeOnce(t *testing.T, o compact.Options, doc string) (*store.Record, compact.Outcome) {
	t.Helper()
	o.Strategies = map[string]compact.Strategy{"fetch": compact.Summarize}
	r := newRig(t, o)
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "c1", Name: "fetch", Input: json.RawMessage(`{"url":"https://example.test/a"}`)},
		returning(tool.Text(doc)))
	r.c.Wait()
	out, ok := r.c.Last("c1")
	if !ok {
		t.Fatal("no outcome")
	}
	return r.get("c1"), out
}

// The summary request is bounded: the result text is cut to
// SummaryInputMaxChars (head and tail, the middle named), the summary to
// SummaryMaxTokens; the summary enters with the pointer and says who
// wrote it.
func TestSummaryRequestIsBounded(t *testing.T) {
	s := &recordingSummarizer{text: "1,060 widgets (widget-0000 to widget-1059), tags alpha, beta, t0-t6."}
	doc := bigJSON(t)
	rec, out := summarizeOnce(t, compact.Options{Summarizer: s, SummaryInputMaxChars: 5000, SummaryMaxTokens: 321}, doc)
	if len(s.reqs) != 1 {
		t.Fatalf("%d summary requests, want 1", len(s.reqs))
	}
	req := s.reqs[0]
	if req.MaxTokens != 321 || req.TaskID != "task1" || req.ToolCallID != "c1" || req.Tool != "fetch" || req.System != compact.SummarySystem {
		t.Errorf("request %+v", req)
	}
	body := req.Prompt[strings.Index(req.Prompt, "<result>"):]
	if n := utf8.RuneCountInString(body); n > 5000+200 {
		t.Errorf("the prompt's result part has %d characters, want about 5,000", n)
	}
	if !strings.Contains(req.Prompt, doc[:2000]) || !strings.Contains(req.Prompt, doc[len(doc)-2000:]) ||
		!strings.Contains(req.Prompt, "characters omitted here before summarizing") || !strings.Contains(req.Prompt, `{"url":"https://example.test/a"}`) {
		t.Errorf("prompt does not keep head, tail, the omission and the arguments:\n%.600s", req.Prompt)
	}
	m := modelText(t, rec)
	if rec.Compaction != store.CompactionSummarize || rec.Pointer == "" || out.SummarizedBy != "mini-1 via openai" ||
		!strings.Contains(m, "summarized by mini-1 via openai") || !strings.HasSuffix(m, s.text) || out.AfterBytes >= out.BeforeBytes {
		t.Errorf("record %s %q, outcome %+v:\n%s", rec.Compaction, rec.Pointer, out, m)
	}
}

// Every way a summary does not happen trims the result, and the record
// says why.
func TestSummarizeFallbacksSayWhy(t *testing.T) {
	doc := bigJSON(t)
	huge := strings.Repeat("a summary longer than the result itself. ", len(doc)/20)
	for name, c := range map[string]struct {
		o    compact.Options
		want string
	}{
		"none":        {compact.Options{}, "trimmed: no model is at hand to summarize with"},
		"unavailable": {compact.Options{Summarizer: &recordingSummarizer{err: compact.Unavailable("the MCP host did not declare the sampling capability")}}, "trimmed: the MCP host did not declare the sampling capability"},
		"timeout":     {compact.Options{Summarizer: blockingSummarizer{entered: make(chan struct{})}, SummaryTimeout: time.Nanosecond}, "trimmed: the summary took longer than compaction.summaryTimeout (1ns)"},
		"empty":       {compact.Options{Summarizer: &recordingSummarizer{text: "  "}}, "trimmed: the summarizer returned an empty summary"},
		"not smaller": {compact.Options{Summarizer: &recordingSummarizer{text: huge}}, "trimmed: the summary by mini-1 via openai ("},
	} {
		t.Run(name, func(t *testing.T) {
			rec, out := summarizeOnce(t, c.o, doc)
			m := modelText(t, rec)
			if rec.Compaction != store.CompactionTrim || rec.Pointer == "" || !strings.Contains(m, c.want) ||
				!strings.Contains(m, "summarize fell back to trim") || out.Fallback == "" || out.SummarizedBy != "" {
				t.Errorf("%s %q, outcome %+v:\n%.500s", rec.Compaction, rec.Pointer, out, m)
			}
		})
	}
}

// SetSummarizer after New serves the next compaction.
func TestSetSummarizer(t *testing.T) {
	r := newRig(t, compact.Options{Default: compact.Summarize})
	r.c.SetSummarizer(fixedSummarizer("short."))
	r.rec.Call(context.Background(), "task1", &tool.Call{ID: "c1", Name: "fetch"}, returning(tool.Text(bigJSON(t))))
	r.c.Wait()
	if rec := r.get("c1"); rec.Compaction != store.CompactionSummarize || !strings.HasSuffix(modelText(t, rec), "\nshort.") {
		t.Errorf("%s: %s", rec.Compaction, modelText(t, rec))
	}
}
