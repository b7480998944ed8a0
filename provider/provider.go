package provider

import (
	"context"
	"encoding/json"
	"iter"
	"net/url"
	"regexp"
	"strings"
)

// Role is who wrote a message.
type Role string

// Roles. Tool results travel in user messages (Anthropic's shape); adapters
// map them to their own (OpenAI: function_call_output items / tool role).
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// BlockType is the type of one block of a message.
type BlockType string

// Block types.
const (
	Text       BlockType = "text"
	ToolUse    BlockType = "tool_use"    // the model asks for a tool call
	ToolResult BlockType = "tool_result" // the result of one tool call
	Image      BlockType = "image"
	// Opaque holds a provider-specific block that must go back to the
	// same provider verbatim in later requests (Anthropic server_tool_use
	// and tool_search_tool_result blocks, OpenAI reasoning or tool search
	// items); other providers drop it.
	Opaque BlockType = "opaque"
)

// Block is one block of a message.
type Block struct {
	Type BlockType `json:"type"`
	Text string    `json:"text,omitempty"` // Text

	// ID is, on a ToolUse, the toolCallId: aibuddy's id of the call,
	// unique across tasks, that records, results and view_tool_call use.
	ID string `json:"id,omitempty"`
	// ProviderID is, on a ToolUse, the id the model provider gave the
	// call, when aibuddy gave it an ID of its own (provider ids repeat:
	// some servers send "call_0" on every turn). Adapters send it back to
	// the provider in its place ([WireIDs]). "" when the provider's id is
	// ID itself or there was none.
	ProviderID string          `json:"provider_id,omitempty"`
	Name       string          `json:"name,omitempty"`  // ToolUse: tool name
	Input      json.RawMessage `json:"input,omitempty"` // ToolUse: raw arguments object

	ToolUseID string  `json:"tool_use_id,omitempty"` // ToolResult: the call it answers
	IsError   bool    `json:"is_error,omitempty"`    // ToolResult
	Content   []Block `json:"content,omitempty"`     // ToolResult: Text and Image blocks

	Data     []byte `json:"data,omitempty"`      // Image: raw bytes (not base64)
	MIMEType string `json:"mime_type,omitempty"` // Image

	// Provider and Raw: on an Opaque block, whose block it is ("anthropic",
	// "openai") and the block verbatim. On another block read from a
	// response, an adapter may keep its own original item there (e.g. an
	// OpenAI output item with its id) and resend it as-is when the block
	// comes back unchanged; adapters of other providers ignore it.
	Provider string          `json:"provider,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
}

// Message is one turn of the transcript.
type Message struct {
	Role   Role    `json:"role"`
	Blocks []Block `json:"blocks"`
}

// Tool is a tool offered to the model in one request.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // the tool's full schema; adapters project it (provider/toolschema)
	// Deferred marks a tool whose schema the provider loads on demand
	// (native strategy only: Anthropic defer_loading, OpenAI deferred
	// tools). On the activeTools path no deferred tool is sent.
	Deferred bool
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // output tokens; 0 means the adapter's default
}

// EventKind names a streamed event.
type EventKind string

// Stream events.
const (
	EventText    EventKind = "text"     // a text delta (Text)
	EventToolUse EventKind = "tool_use" // a complete tool call (Block)
	EventDone    EventKind = "done"     // the response ended (StopReason, Usage, Message)
)

// Usage counts tokens as the provider reports them.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Event is one item of a streamed response.
type Event struct {
	Kind       EventKind
	Text       string
	Block      *Block
	StopReason string   // "end_turn", "tool_use", "max_tokens", ... (provider words mapped to Anthropic's)
	Usage      Usage    //
	Message    *Message // Done: the whole assistant message, opaque blocks included, for the transcript
}

// Model is one route to a model API.
type Model interface {
	// Strategy is how this route presents deferred tools.
	Strategy() Strategy
	// Stream sends req and streams the response. The sequence ends after
	// EventDone or an error; ranging stops early when ctx is done.
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// ImageRejection is implemented by an adapter's error when the API refused
// an image of the request (case BH-013: "If the provider still rejects an
// image, that image block is swapped for a text note in the stored
// history"). Replace returns the request's messages with the refused image
// (or every image, when the API did not say which) swapped for a text note.
type ImageRejection interface {
	error
	Replace(msgs []Message) []Message
}

// Strategy is how deferred tools reach the model (seed: "Both strategies
// consume the same defer decision; only schema presentation differs").
type Strategy string

// Strategies.
const (
	// Native: one stable tools array holding every tool, deferred ones
	// marked; the provider's own tool search expands them on demand.
	Native Strategy = "native"
	// ActiveTools: the tools array holds the core tools plus what
	// aibuddy's tool_search activated; deferred tools are not sent.
	ActiveTools Strategy = "active_tools"
)

// Route describes where a model call goes.
type Route struct {
	Provider string // "anthropic", "openai" (Responses API), "openai-chat" (chat completions compatible)
	Model    string // e.g. "claude-sonnet-4-5", "gpt-5.4", "llama3"
	BaseURL  string // "" means the provider's official endpoint
	// BYOK: the user's own key against the provider (not a platform
	// gateway that holds the key).
	BYOK bool
	// NativeToolSearch is the user's override of the model allowlist
	// (settings key provider.nativeToolSearch). "" means NativeAuto.
	NativeToolSearch NativeToolSearch
}

// NativeToolSearch says when a route uses the provider's own tool search
// (settings key provider.nativeToolSearch, default "auto").
type NativeToolSearch string

// Values of NativeToolSearch.
const (
	// NativeAuto: the route rules of ChooseStrategy, including the
	// documented model allowlist (SupportsNativeToolSearch).
	NativeAuto NativeToolSearch = "auto"
	// NativeOn: every "anthropic" and "openai" route is native, whatever
	// its model, endpoint or key: for a model newer than the allowlist or
	// a gateway that forwards to the provider. A model or endpoint
	// without tool search then refuses the request (HTTP 400); the
	// "openai-chat" route has no native path and stays activeTools.
	NativeOn NativeToolSearch = "on"
	// NativeOff: every route uses aibuddy's activeTools path.
	NativeOff NativeToolSearch = "off"
)

// ParseNativeToolSearch reads a provider.nativeToolSearch value: "auto"
// (or ""), "on" or "off", case-insensitive. Any other value is an error.
func ParseNativeToolSearch(s string) (NativeToolSearch, error) {
	return parseChoice(s, "native tool search", NativeAuto, NativeOn, NativeOff)
}

// ChooseStrategy is the one place where a route picks its deferral
// strategy (seed: "Genuine Anthropic routes with native tool search and
// OpenAI BYOK routes using the Responses API can keep a stable tool array
// ... Haiku, the platform OpenAI gateway, third-party compatibility
// endpoints, and other models use aibuddy's activeTools path").
//
// With r.NativeToolSearch "auto" (or ""), a route is Native only when all
// hold: provider "anthropic" on the official endpoint (https, host
// api.anthropic.com, or BaseURL "") or provider "openai" with BYOK on the
// official endpoint (api.openai.com); and SupportsNativeToolSearch of the
// provider and model. Every other route, including unknown and older
// models (Claude 3.x, 4, 4.1; GPT-4o, GPT-5 before 5.4), is ActiveTools:
// those models answer a request carrying the tool search tool with
// HTTP 400. "on" and "off" override the rules (see NativeOn, NativeOff).
func ChooseStrategy(r Route) Strategy {
	if r.Provider != "anthropic" && r.Provider != "openai" {
		return ActiveTools
	}
	switch r.NativeToolSearch {
	case NativeOn:
		return Native
	case NativeOff:
		return ActiveTools
	}
	switch r.Provider {
	case "anthropic":
		if official(r.BaseURL, "api.anthropic.com") && SupportsNativeToolSearch(r.Provider, r.Model) {
			return Native
		}
	case "openai":
		if r.BYOK && official(r.BaseURL, "api.openai.com") && SupportsNativeToolSearch(r.Provider, r.Model) {
			return Native
		}
	}
	return ActiveTools
}

// anthropicToolSearchModels are the Claude model aliases whose API accepts
// the tool search tool (tool_search_tool_bm25_20251119) and defer_loading.
// Source: "Tool search tool", Model compatibility / supportedModels,
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
// (as published November 2026; the tool was introduced with Claude Opus 4.5
// and Sonnet 4.5, and Claude 3.x, Opus 4, Opus 4.1 and Sonnet 4 are not
// listed). The page also lists claude-haiku-4-5 and claude-haiku-5-5; they
// are left out on purpose: the seed sends Haiku through activeTools
// ("Haiku ... use aibuddy's activeTools path"); NativeOn opts in.
var anthropicToolSearchModels = []string{
	"claude-sonnet-4-5", "claude-opus-4-5",
	"claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8",
	"claude-sonnet-5", "claude-opus-5", "claude-sonnet-5-5", "claude-opus-5-5",
	"claude-mythos-preview", "claude-mythos-5", "claude-mythos-5-1", "claude-mythos-5-2",
	"claude-fable-5", "claude-fable-5-1", "claude-fable-5-2",
}

// openAIToolSearchFamilies are the GPT model families whose Responses API
// accepts {"type":"tool_search"} and defer_loading. Source: OpenAI guide
// "Using tools" ("Only gpt-5.4 and later models support tool_search"),
// https://developers.openai.com/api/docs/guides/tools, and "Tool search",
// https://developers.openai.com/api/docs/guides/tools-tool-search. A
// family covers its variants and snapshots: gpt-5.4, gpt-5.4-mini,
// gpt-5.4-pro, gpt-5.4-2026-03-05. Earlier models (gpt-4o, gpt-4.1, o3,
// gpt-5 to gpt-5.3-codex) are not in it.
var openAIToolSearchFamilies = []string{"gpt-5.4", "gpt-5.5"}

// toolSearchModel matches the allowlists: a Claude alias exactly, or
// followed by a dated snapshot ("-20250929") or "-latest"; a GPT family
// exactly or followed by "-" and a variant or date.
var toolSearchModel = map[string]*regexp.Regexp{
	"anthropic": regexp.MustCompile(`^(` + quoteAll(anthropicToolSearchModels) + `)(-\d{8}|-latest)?$`),
	"openai":    regexp.MustCompile(`^(` + quoteAll(openAIToolSearchFamilies) + `)(-[a-z0-9][a-z0-9.-]*)?$`),
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

// SupportsNativeToolSearch reports whether model (a model name as sent to
// the API, case-insensitive) is on the documented allowlist of provider
// ("anthropic" or "openai") for the provider's own tool search. Other
// providers and unknown models report false. The allowlists and their
// sources are in this file; NativeOn is the way past them.
func SupportsNativeToolSearch(provider, model string) bool {
	re, ok := toolSearchModel[provider]
	return ok && re.MatchString(strings.ToLower(strings.TrimSpace(model)))
}

// official reports whether base is empty or names host over https.
func official(base, host string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && u.Scheme == "https" && strings.EqualFold(u.Hostname(), host)
}
