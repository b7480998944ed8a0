package mcpserver

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/compact"
)

// SamplingVia names MCP sampling as the route of a summary in the record
// ("summarized by <model> via host sampling").
const SamplingVia = "host sampling"

// hostSession keeps the MCP session of the latest request a gateway
// received: a summary is asked for after the tools/call reply, when no
// request carries the session any more, and a session that has just ended
// still tells what its host declared.
type hostSession struct {
	ss atomic.Pointer[mcp.ServerSession]
}

// note is receiving middleware recording each request's session.
func (h *hostSession) note(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			h.ss.Store(ss)
		}
		return next(ctx, method, req)
	}
}

// TaskID is the task the gateway's calls are recorded under
// (Options.TaskID): one MCP session is one task.
func (g *Gateway) TaskID() string { return g.opts.TaskID }

// Sampler is the compact.Summarizer of `aibuddy mcp`: the summary of a
// large result of the gateway's session is asked of the host through MCP
// sampling (sampling/createMessage, MCP spec 2025-06-18, "Sampling"), so
// the host's model writes it and the host's user may review the request.
// It is sent after the tools/call reply (compaction never delays the
// result), so it needs a host that declared the sampling capability on a
// protocol version where a server may send requests of its own (2025-11-25
// or older): a host on 2026-07-28 may be asked only inside a reply
// (SEP-2322). Otherwise, and when the session has ended, Summarize returns
// a compact.Unavailable error naming the reason, and the result is trimmed.
type Sampler struct {
	Gateway *Gateway
	// Preferences are the model preferences sent with each request; nil
	// means DefaultSamplingPreferences("").
	Preferences *mcp.ModelPreferences
}

// DefaultSamplingPreferences asks the host for a cheap, fast model (cost
// and speed before intelligence: a summary is a simple task), with hint
// as the first model hint when set (settings compaction.summaryModel).
func DefaultSamplingPreferences(hint string) *mcp.ModelPreferences {
	p := &mcp.ModelPreferences{CostPriority: 0.9, SpeedPriority: 0.8, IntelligencePriority: 0.3}
	if hint != "" {
		p.Hints = []*mcp.ModelHint{{Name: hint}}
	}
	return p
}

// Summarize implements compact.Summarizer with one sampling/createMessage
// request: req.System as the system prompt, req.Prompt as the one user
// message, req.MaxTokens, no context included. The summary names the model
// the host reports. Errors: compact.Unavailable (no session, no sampling
// capability, a 2026-07-28 host), the host's refusal or failure, an answer
// that is not text.
func (s Sampler) Summarize(ctx context.Context, req *compact.SummaryRequest) (*compact.Summary, error) {
	if s.Gateway == nil {
		return nil, compact.Unavailable("no MCP gateway serves this task")
	}
	ss := s.Gateway.host.ss.Load()
	if ss == nil {
		return nil, compact.Unavailable("no MCP host session has sent this gateway a request")
	}
	ip := ss.InitializeParams()
	switch {
	case ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil:
		return nil, compact.Unavailable("the MCP host did not declare the sampling capability")
	case ip.ProtocolVersion >= multiRound:
		return nil, compact.Unavailable(fmt.Sprintf("the MCP host speaks protocol %s, where a server may ask for sampling only inside a reply (SEP-2322), and summaries are made after the reply", ip.ProtocolVersion))
	}
	prefs := s.Preferences
	if prefs == nil {
		prefs = DefaultSamplingPreferences("")
	}
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		SystemPrompt:     req.System,
		MaxTokens:        int64(req.MaxTokens),
		IncludeContext:   "none",
		ModelPreferences: prefs,
		Messages:         []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Prompt}}},
	})
	if err != nil {
		return nil, fmt.Errorf("the MCP host's sampling/createMessage failed: %w", err)
	}
	text, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return nil, fmt.Errorf("the MCP host answered sampling/createMessage with %T content, want text", res.Content)
	}
	return &compact.Summary{Text: text.Text, Model: res.Model, Via: SamplingVia}, nil
}
