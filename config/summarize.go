package config

import (
	"fmt"
	"strings"
)

// CompactionSummary configures the model summaries of the "summarize"
// compaction strategy. Its keys sit in "compaction" beside the others
// (compaction.summaryModel, ...). Zero means the default given.
type CompactionSummary struct {
	// SummaryModel is the model `aibuddy run` asks for summaries, through
	// the run's own provider (same key, same endpoint). Default: a
	// cheaper model of that provider (DefaultSummaryModel); "none" never
	// summarizes in `aibuddy run` (results are trimmed, and the record
	// says so). `aibuddy mcp` asks the host through MCP sampling instead,
	// and the host picks the model.
	SummaryModel string `json:"summaryModel,omitempty"`
	// SummaryTimeout bounds one summary request; past it the result is
	// trimmed. Default 60 s (compact.DefaultSummaryTimeout).
	SummaryTimeout Duration `json:"summaryTimeout,omitempty"`
	// SummaryMaxTokens bounds one summary, in the model's output tokens.
	// Default 800 (compact.DefaultSummaryMaxTokens).
	SummaryMaxTokens int `json:"summaryMaxTokens,omitempty"`
	// SummaryInputMaxChars bounds the result text sent to be summarized,
	// in characters: a longer one is sent as its first and last halves
	// with the omitted middle marked. Default 60,000 (about 15,000
	// tokens; compact.DefaultSummaryInputMaxChars).
	SummaryInputMaxChars int `json:"summaryInputMaxChars,omitempty"`
}

// NoSummaryModel is the compaction.summaryModel value that turns the
// summaries of `aibuddy run` off.
const NoSummaryModel = "none"

// defaultSummaryModels are the cheaper models of each provider of
// `aibuddy run` that summarize by default: Anthropic's Haiku class
// (claude-haiku-4-5, "our fastest model", Models overview,
// https://docs.anthropic.com/en/docs/about-claude/models) and OpenAI's
// mini class (gpt-5-mini, "a faster, cost-efficient version of GPT-5",
// https://platform.openai.com/docs/models). A chat-completions endpoint
// serves models aibuddy cannot know, so it summarizes with the run's own
// model.
var defaultSummaryModels = map[string]string{
	"anthropic": "claude-haiku-4-5",
	"openai":    "gpt-5-mini",
}

// DefaultSummaryModel is the summary model of `aibuddy run` on provider
// ("anthropic", "openai", "openai-chat") whose run model is runModel,
// when compaction.summaryModel is unset: claude-haiku-4-5 for anthropic,
// gpt-5-mini for openai, runModel for openai-chat and any other.
func DefaultSummaryModel(provider, runModel string) string {
	if m, ok := defaultSummaryModels[provider]; ok {
		return m
	}
	return runModel
}

// Off reports whether compaction.summaryModel is "none" (any case).
func (s CompactionSummary) Off() bool {
	return strings.EqualFold(strings.TrimSpace(s.SummaryModel), NoSummaryModel)
}

// SummaryModelFor is the model `aibuddy run` summarizes with: the
// setting, else DefaultSummaryModel; "" when the setting is "none".
func (s CompactionSummary) SummaryModelFor(provider, runModel string) string {
	switch m := strings.TrimSpace(s.SummaryModel); {
	case s.Off():
		return ""
	case m != "":
		return m
	}
	return DefaultSummaryModel(provider, runModel)
}

// check refuses negative bounds and a summary model with spaces inside.
func (s CompactionSummary) check() error {
	for k, v := range map[string]int64{"compaction.summaryTimeout": int64(s.SummaryTimeout),
		"compaction.summaryMaxTokens": int64(s.SummaryMaxTokens), "compaction.summaryInputMaxChars": int64(s.SummaryInputMaxChars)} {
		if v < 0 {
			return fmt.Errorf("%s is negative (omit it or use 0 for its default)", k)
		}
	}
	if m := strings.TrimSpace(s.SummaryModel); strings.ContainsAny(m, " \t\n") {
		return fmt.Errorf("compaction.summaryModel %q is not a model name (a name such as \"claude-haiku-4-5\", or \"none\")", s.SummaryModel)
	}
	return nil
}
