package provider

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// SchemaDecision is how one tool's input schema goes to a route's API, for
// the effective-set explanation (case BH-093: "each tool gets its own
// strict decision, and that decision is recorded in the effective-set
// explanation").
type SchemaDecision struct {
	// Tool is the tool's name as sent.
	Tool string
	// Dialect is the schema dialect it was projected into: "anthropic",
	// "openai-strict", "openai", "gemini".
	Dialect string
	// Strict is true when the tool is sent with "strict": true (OpenAI
	// Responses only).
	Strict bool
	// Reason says why a route with a strict mode sends the tool non-strict
	// (the first change strict mode could not carry, or "strict mode off
	// in settings"); "" otherwise.
	Reason string
	// Changes lists the lossy changes made for this dialect ("path: what"),
	// each also logged at Warn: what the provider no longer enforces and
	// the full schema still checks at dispatch (Parameters stage).
	Changes []string
	// Rewrites lists the meaning-preserving changes made for this dialect
	// ("path: what": a $ref inlined, a one-branch anyOf collapsed, an
	// optional property sent required and nullable for strict mode): the
	// shape the model sees differs, what it may send does not.
	Rewrites []string
	// Err is set when the schema cannot be projected at all (it wraps
	// toolschema.ErrSchema); a request with this tool is not sent.
	Err error
}

// SchemaExplainer is implemented by adapters that can say, before
// sending, how each tool of a request will be presented. ExplainSchemas
// returns one decision per tool that the request would carry, in the
// order sent; none for an empty set, and the request then carries no
// tools field at all (nor tool_choice or parallel_tool_calls; case
// BH-095).
type SchemaExplainer interface {
	ExplainSchemas(tools []Tool) []SchemaDecision
}

// NoToolsReason is the effective-set explanation line for a request with
// no active tools (case BH-095: "no tools active: reason …").
func NoToolsReason(reason string) string {
	if reason == "" {
		reason = "none offered"
	}
	return "no tools active: " + reason + " (the request carries no tools field)"
}

// StrictMode says when the OpenAI Responses adapter sends a function tool
// with "strict": true (settings key provider.openaiStrict, default "auto").
type StrictMode string

// Values of StrictMode.
const (
	// StrictAuto: strict when the schema fits strict mode's subset after
	// meaning-preserving rewrites (optional → required and nullable,
	// additionalProperties false added, disjoint oneOf as anyOf).
	StrictAuto StrictMode = "auto"
	// StrictExact: strict only when the schema fits the subset as given,
	// without those rewrites.
	StrictExact StrictMode = "exact"
	// StrictOff: never strict.
	StrictOff StrictMode = "off"
)

// ParseStrictMode reads a provider.openaiStrict value: "auto" (or ""),
// "exact" or "off", case-insensitive. Any other value is an error.
func ParseStrictMode(s string) (StrictMode, error) {
	return parseChoice(s, "openai strict mode", StrictAuto, StrictExact, StrictOff)
}

// SchemaDialect is the schema subset a chat-completions route sends
// (settings key provider.schemaDialect, default "auto").
type SchemaDialect string

// Values of SchemaDialect.
const (
	// DialectAuto: DialectGemini for Gemini's OpenAI-compatible endpoint
	// (host generativelanguage.googleapis.com), else DialectOpenAI.
	DialectAuto SchemaDialect = "auto"
	// DialectOpenAI: non-strict OpenAI function parameters.
	DialectOpenAI SchemaDialect = "openai"
	// DialectGemini: Gemini's OpenAPI-subset Schema
	// (toolschema.ForGemini).
	DialectGemini SchemaDialect = "gemini"
)

// ParseSchemaDialect reads a provider.schemaDialect value: "auto" (or ""),
// "openai" or "gemini", case-insensitive. Any other value is an error.
func ParseSchemaDialect(s string) (SchemaDialect, error) {
	return parseChoice(s, "schema dialect", DialectAuto, DialectOpenAI, DialectGemini)
}

// parseChoice reads one of a setting's values, case-insensitive and
// trimmed: "" is def, the first of the allowed values; any other value is
// an error naming what and the allowed values ("want auto, on or off").
func parseChoice[T ~string](s, what string, def T, others ...T) (T, error) {
	v := T(strings.ToLower(strings.TrimSpace(s)))
	if v == "" || v == def {
		return def, nil
	}
	if slices.Contains(others, v) {
		return v, nil
	}
	names := []string{string(def)}
	for _, o := range others {
		names = append(names, string(o))
	}
	return "", fmt.Errorf("%s %q: want %s or %s", what, s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// ResolveDialect turns DialectAuto into the dialect for baseURL: Gemini's
// OpenAI-compatible endpoint
// (https://generativelanguage.googleapis.com/v1beta/openai/, Gemini API
// docs "OpenAI compatibility") is DialectGemini, anything else
// DialectOpenAI. Other values are returned as they are.
func ResolveDialect(d SchemaDialect, baseURL string) SchemaDialect {
	if d != "" && d != DialectAuto {
		return d
	}
	if u, err := url.Parse(baseURL); err == nil && strings.EqualFold(u.Hostname(), "generativelanguage.googleapis.com") {
		return DialectGemini
	}
	return DialectOpenAI
}
