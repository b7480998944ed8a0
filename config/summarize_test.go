package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/config"
)

// The summary keys sit in "compaction" beside the others, are checked,
// and keep the case check of every key.
func TestCompactionSummaryKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"compaction": {"workers": 2, "summaryModel": "claude-haiku-4-5", "summaryTimeout": "20s",
		"summaryMaxTokens": 500, "summaryInputMaxChars": 9000}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Compaction.CompactionSummary
	if s.SummaryModel != "claude-haiku-4-5" || s.SummaryTimeout.D() != 20*time.Second || s.SummaryMaxTokens != 500 || s.SummaryInputMaxChars != 9000 {
		t.Fatalf("decoded %+v", s)
	}
	for doc, want := range map[string]string{
		`{"compaction": {"summaryMaxTokens": -1}}`:         "compaction.summaryMaxTokens is negative",
		`{"compaction": {"summaryInputMaxChars": -5}}`:     "compaction.summaryInputMaxChars is negative",
		`{"compaction": {"summaryTimeout": "-1s"}}`:        "compaction.summaryTimeout is negative",
		`{"compaction": {"summaryModel": "claude haiku"}}`: "is not a model name",
		`{"compaction": {"summarymodel": "x"}}`:            `did you mean "compaction.summaryModel"`,
	} {
		if _, err := config.Parse([]byte(doc)); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// The summary model of `aibuddy run`: the setting, else a cheaper model
// of the run's provider, else (a chat-completions endpoint) the run's own
// model; "none" turns summaries off.
func TestSummaryModelFor(t *testing.T) {
	for _, c := range []struct{ setting, provider, run, want string }{
		{"", "anthropic", "claude-sonnet-4-5", "claude-haiku-4-5"},
		{"", "openai", "gpt-5.4", "gpt-5-mini"},
		{"", "openai-chat", "llama3", "llama3"},
		{"claude-3-5-haiku-latest", "anthropic", "", "claude-3-5-haiku-latest"},
		{"None", "openai", "gpt-5.4", ""},
	} {
		s := config.CompactionSummary{SummaryModel: c.setting}
		if got := s.SummaryModelFor(c.provider, c.run); got != c.want {
			t.Errorf("%+v: %q", c, got)
		}
	}
}
