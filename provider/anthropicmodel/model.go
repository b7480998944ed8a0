package anthropicmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// Defaults.
const (
	DefaultModel     = "claude-sonnet-4-5"
	DefaultMaxTokens = 8192 // output tokens
)

// Tool search server tool (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool,
// "Tool search tool variants"): natural-language queries ranked with BM25.
const (
	ToolSearchType = "tool_search_tool_bm25_20251119"
	ToolSearchName = "tool_search_tool_bm25"
)

// Options configure a Model. The zero value works with ANTHROPIC_API_KEY
// set.
type Options struct {
	// APIKey authenticates requests (the SDK, v2.15.0, sends it as
	// "Authorization: Bearer"). Default: $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL of the API. Default: $ANTHROPIC_BASE_URL, else
	// https://api.anthropic.com.
	BaseURL string
	// Model is the model name. Default: DefaultModel. A Request.Model that
	// is not empty overrides it for one call.
	Model string
	// MaxTokens bounds output tokens per response. Default:
	// DefaultMaxTokens. A Request.MaxTokens above 0 overrides it.
	MaxTokens int
	// HTTPClient sends the requests. Default: the SDK's client.
	HTTPClient *http.Client
	// MaxRetries for retryable failures (429, 5xx, connection errors).
	// Default: the SDK's (2); negative means none.
	MaxRetries int
	// Strategy overrides how deferred tools are presented. Default:
	// provider.ChooseStrategy for this route (provider "anthropic", Model,
	// BaseURL, BYOK).
	Strategy provider.Strategy
	// Logger receives warnings about lossy schema projections. Default:
	// discard.
	Logger *slog.Logger
}

// Model is a provider.Model for the Anthropic Messages API. It is safe for
// concurrent use.
type Model struct {
	client    anthropic.Client
	model     string
	maxTokens int
	strategy  provider.Strategy
	log       *slog.Logger

	mu      sync.Mutex
	schemas map[string]projection // name + "\x00" + full schema -> projection
}

// projection is one tool's input_schema as sent and the decision behind it.
type projection struct {
	schema   json.RawMessage
	decision provider.SchemaDecision
}

var (
	_ provider.Model           = (*Model)(nil)
	_ provider.SchemaExplainer = (*Model)(nil)
)

// New returns a Model for opts (nil-safe zero values; see Options).
func New(opts Options) *Model {
	if opts.APIKey == "" {
		opts.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.Strategy == "" {
		opts.Strategy = provider.ChooseStrategy(provider.Route{
			Provider: "anthropic", Model: opts.Model, BaseURL: opts.BaseURL, BYOK: true,
		})
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var ro []option.RequestOption
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	if opts.MaxRetries != 0 {
		ro = append(ro, option.WithMaxRetries(max(opts.MaxRetries, 0)))
	}
	return &Model{
		client:    anthropic.NewClient(ro...),
		model:     opts.Model,
		maxTokens: opts.MaxTokens,
		strategy:  opts.Strategy,
		log:       opts.Logger,
		schemas:   map[string]projection{},
	}
}

// Strategy is how this route presents deferred tools.
func (m *Model) Strategy() provider.Strategy { return m.strategy }

// Stream sends req to POST /v1/messages with "stream": true and yields a
// text event per text delta, a tool_use event per complete tool call, and
// one done event with the stop reason ("end_turn", "tool_use",
// "max_tokens", "pause_turn", "refusal", ... as the API says), usage and
// the whole assistant message (text, tool_use and Opaque blocks in API
// order). Errors: a request the adapter cannot build, the SDK's
// *anthropic.Error for API failures (an *ImageError when a 400 names an
// image), a stream that ends before message_stop (io.ErrUnexpectedEOF), or
// ctx's error.
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		params, origins, err := m.params(req)
		if err != nil {
			yield(provider.Event{}, err)
			return
		}
		stream := m.client.Messages.NewStreaming(ctx, params)
		defer stream.Close()
		var acc anthropic.Message
		for stream.Next() {
			ev := stream.Current()
			if err := acc.Accumulate(ev); err != nil {
				yield(provider.Event{}, fmt.Errorf("anthropicmodel: malformed stream: %w", err))
				return
			}
			switch ev.Type {
			case "content_block_delta":
				if ev.Delta.Type == "text_delta" && acc.Content[ev.Index].Type == "text" {
					if !yield(provider.Event{Kind: provider.EventText, Text: ev.Delta.Text}, nil) {
						return
					}
				}
			case "content_block_stop":
				if cb := acc.Content[ev.Index]; cb.Type == "tool_use" {
					b := toolUse(cb)
					if !yield(provider.Event{Kind: provider.EventToolUse, Block: &b}, nil) {
						return
					}
				}
			case "message_stop":
				msg := assistantMessage(&acc)
				yield(provider.Event{
					Kind:       provider.EventDone,
					StopReason: string(acc.StopReason),
					Usage:      provider.Usage{InputTokens: int(acc.Usage.InputTokens), OutputTokens: int(acc.Usage.OutputTokens)},
					Message:    &msg,
				}, nil)
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(provider.Event{}, classify(err, origins))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(provider.Event{}, err)
			return
		}
		yield(provider.Event{}, fmt.Errorf("anthropicmodel: stream ended before message_stop: %w", io.ErrUnexpectedEOF))
	}
}

// params builds the SDK request for req.
func (m *Model) params(req *provider.Request) (anthropic.MessageNewParams, [][]origin, error) {
	if req == nil {
		return anthropic.MessageNewParams{}, nil, errors.New("anthropicmodel: nil request")
	}
	model := req.Model
	if model == "" {
		model = m.model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.maxTokens
	}
	msgs, origins := messages(provider.WireIDs(req.Messages))
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: int64(maxTokens),
		Messages:  msgs,
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	tools, err := m.tools(req.Tools)
	if err != nil {
		return p, nil, err
	}
	p.Tools = tools
	return p, origins, nil
}

// tools builds the tools array for the route's strategy: Native sends every
// tool (deferred ones with defer_loading) and, when any is deferred, the
// BM25 tool search tool first; ActiveTools sends only tools not deferred.
// The order of req.Tools is kept, so the array is stable across steps.
func (m *Model) tools(ts []provider.Tool) ([]anthropic.ToolUnionParam, error) {
	native := m.strategy == provider.Native
	var out []anthropic.ToolUnionParam
	if native {
		for _, t := range ts {
			if t.Deferred {
				out = append(out, anthropic.ToolUnionParam{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{
					Type: ToolSearchType,
				}})
				break
			}
		}
	}
	for _, t := range ts {
		if t.Deferred && !native {
			continue
		}
		schema, err := m.project(t)
		if err != nil {
			return nil, err
		}
		tp := &anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		if t.Deferred {
			tp.DeferLoading = param.NewOpt(true)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: tp})
	}
	return out, nil
}

// project returns the Anthropic projection of t's schema, computed once per
// distinct schema; lossy notes are logged at Warn the first time.
func (m *Model) project(t provider.Tool) (json.RawMessage, error) {
	pr := m.projection(t)
	return pr.schema, pr.decision.Err
}

func (m *Model) projection(t provider.Tool) projection {
	raw := t.InputSchema
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	key := t.Name + "\x00" + string(raw)
	m.mu.Lock()
	pr, ok := m.schemas[key]
	m.mu.Unlock()
	if ok {
		return pr
	}
	pr.decision = provider.SchemaDecision{Tool: t.Name, Dialect: "anthropic"}
	s, notes, err := toolschema.ForAnthropic(raw)
	if err != nil {
		pr.decision.Err = fmt.Errorf("anthropicmodel: tool %s: %w", t.Name, err)
		return pr
	}
	pr.schema = s
	for _, n := range notes {
		if n.Lossy {
			m.log.Warn("tool schema changed for Anthropic", "tool", t.Name, "path", n.Path, "change", n.What)
			pr.decision.Changes = append(pr.decision.Changes, n.String())
		} else {
			m.log.Debug("tool schema projected for Anthropic", "tool", t.Name, "path", n.Path, "change", n.What)
			pr.decision.Rewrites = append(pr.decision.Rewrites, n.String())
		}
	}
	m.mu.Lock()
	m.schemas[key] = pr
	m.mu.Unlock()
	return pr
}

// ExplainSchemas says, per tool the request would carry on this route's
// strategy, what its input_schema projection changed
// (provider.SchemaExplainer).
func (m *Model) ExplainSchemas(tools []provider.Tool) []provider.SchemaDecision {
	var out []provider.SchemaDecision
	for _, t := range tools {
		if t.Deferred && m.strategy != provider.Native {
			continue
		}
		out = append(out, m.projection(t).decision)
	}
	return out
}

func toolUse(cb anthropic.ContentBlockUnion) provider.Block {
	input := json.RawMessage(cb.Input)
	if len(input) == 0 || !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	return provider.Block{Type: provider.ToolUse, ID: cb.ID, Name: cb.Name, Input: append(json.RawMessage(nil), input...)}
}

// assistantMessage maps the accumulated response: text and tool_use blocks
// to their neutral types, every other block (server_tool_use,
// tool_search_tool_result, thinking, blocks this code does not know) to
// Opaque with the API's JSON verbatim.
func assistantMessage(acc *anthropic.Message) provider.Message {
	msg := provider.Message{Role: provider.Assistant}
	for _, cb := range acc.Content {
		switch cb.Type {
		case "text":
			msg.Blocks = append(msg.Blocks, provider.Block{Type: provider.Text, Text: cb.Text})
		case "tool_use":
			msg.Blocks = append(msg.Blocks, toolUse(cb))
		default:
			msg.Blocks = append(msg.Blocks, provider.Block{
				Type: provider.Opaque, Provider: "anthropic", Raw: json.RawMessage(cb.RawJSON()),
			})
		}
	}
	return msg
}
