package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/anthropicmodel"
	"github.com/aibuddy/aibuddy/provider/chatmodel"
	"github.com/aibuddy/aibuddy/provider/openaimodel"
)

// schemaJSON is what one provider dialect sends of one tool's input
// schema (provider.SchemaDecision), for `aibuddy tools` (case BH-093: each
// tool's strict decision is in the effective-set explanation).
type schemaJSON struct {
	// Route is the `aibuddy run --provider` value ("anthropic", "openai",
	// "openai-chat"), with the chat dialect in parentheses when it is
	// Gemini's: "openai-chat (gemini)".
	Route string `json:"route"`
	// Dialect is the schema dialect: "anthropic", "openai-strict",
	// "openai", "gemini".
	Dialect string `json:"dialect"`
	Strict  bool   `json:"strict,omitempty"`
	// Reason says why the OpenAI Responses route sends the tool
	// non-strict.
	Reason string `json:"reason,omitempty"`
	// Changes are the lossy changes made for the dialect ("path: what"):
	// flattened unions, inlined $refs, keywords moved into descriptions.
	Changes []string `json:"changes,omitempty"`
	// Rewrites are the meaning-preserving ones: an inlined $ref, a
	// collapsed union, optional properties sent required and nullable.
	Rewrites []string `json:"rewrites,omitempty"`
	// Error is set when the dialect cannot carry the schema at all: a
	// request with the tool is not sent on that route.
	Error string `json:"error,omitempty"`
}

// dialectRoutes are the adapters `aibuddy tools` asks how they would send
// each tool, with the settings provider.openaiStrict and
// provider.schemaRefDepth; each chat-completions dialect is shown, as
// provider.schemaDialect "auto" picks by endpoint. The adapters are built
// with a placeholder key and never send anything.
func dialectRoutes(r *run) ([]string, []provider.SchemaExplainer, error) {
	strict, err := provider.ParseStrictMode(r.cfg.Provider.OpenAIStrict)
	if err != nil {
		return nil, nil, fmt.Errorf("provider.openaiStrict: %w", err)
	}
	dialect, err := provider.ParseSchemaDialect(r.cfg.Provider.SchemaDialect)
	if err != nil {
		return nil, nil, fmt.Errorf("provider.schemaDialect: %w", err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const key = "explain-only"
	names := []string{"anthropic", "openai"}
	ex := []provider.SchemaExplainer{
		anthropicmodel.New(anthropicmodel.Options{APIKey: key, BaseURL: "http://explain.invalid", Logger: quiet, Strategy: provider.ActiveTools}),
		openaimodel.New(openaimodel.Options{APIKey: key, BaseURL: "http://explain.invalid/v1/", Model: "gpt-5.4", Logger: quiet,
			Strategy: provider.ActiveTools, Strict: strict}),
	}
	for _, d := range []provider.SchemaDialect{provider.DialectOpenAI, provider.DialectGemini} {
		if dialect != provider.DialectAuto && dialect != d {
			continue // the setting pins the chat route's dialect
		}
		name := "openai-chat"
		if d == provider.DialectGemini {
			name += " (gemini)"
		}
		names = append(names, name)
		ex = append(ex, chatmodel.New(chatmodel.Options{APIKey: key, BaseURL: "http://explain.invalid/v1/", Model: "explain", Logger: quiet,
			Dialect: d, RefDepth: r.cfg.Provider.SchemaRefDepth}))
	}
	return names, ex, nil
}

// schemaDecisions is, per tool of rows (by name), what each dialect route
// sends of its schema, in dialectRoutes' order.
func schemaDecisions(r *run, rows []toolRow) (map[string][]schemaJSON, error) {
	names, ex, err := dialectRoutes(r)
	if err != nil {
		return nil, err
	}
	tools := make([]provider.Tool, 0, len(rows))
	for _, row := range rows {
		t := row.tool
		tools = append(tools, provider.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	out := map[string][]schemaJSON{}
	for i, e := range ex {
		for _, d := range e.ExplainSchemas(tools) {
			s := schemaJSON{Route: names[i], Dialect: d.Dialect, Strict: d.Strict, Reason: d.Reason, Changes: d.Changes, Rewrites: d.Rewrites}
			if d.Err != nil {
				s.Error = d.Err.Error()
			}
			out[d.Tool] = append(out[d.Tool], s)
		}
	}
	return out, nil
}

// writeSchemasText prints, per tool, what each provider dialect does to
// its schema: one line for a tool every route sends as it is, else a line
// per route that sends it non-strict (why), changes it with loss
// ("lossy": what the provider no longer enforces), rewrites it without
// loss ("rewritten") or cannot send it.
func writeSchemasText(w io.Writer, rows []toolRow, dec map[string][]schemaJSON) {
	fmt.Fprintf(w, "\nSchemas per provider dialect (what aibuddy run sends each API; the full schema is checked at dispatch):\n")
	for _, row := range rows {
		name := row.tool.Name()
		var notes []string
		strict := false
		for _, s := range dec[name] {
			switch {
			case s.Error != "":
				notes = append(notes, fmt.Sprintf("%s: cannot be sent: %s", s.Route, s.Error))
			case s.Route == "openai" && !s.Strict:
				notes = append(notes, fmt.Sprintf("%s: non-strict: %s", s.Route, s.Reason))
			case s.Strict:
				strict = true
			}
			label := s.Route
			if !strings.Contains(label, s.Dialect) {
				label += " (" + s.Dialect + ")"
			}
			if len(s.Changes) > 0 && s.Error == "" {
				notes = append(notes, fmt.Sprintf("%s: lossy: %s", label, strings.Join(s.Changes, "; ")))
			}
			if len(s.Rewrites) > 0 && s.Error == "" {
				notes = append(notes, fmt.Sprintf("%s: rewritten: %s", label, strings.Join(s.Rewrites, "; ")))
			}
		}
		if len(notes) == 0 {
			line := "unchanged on every route"
			if strict {
				line += ", strict on openai"
			}
			fmt.Fprintf(w, "  %s: %s\n", name, line)
			continue
		}
		fmt.Fprintf(w, "  %s:\n", name)
		for _, n := range notes {
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
}
