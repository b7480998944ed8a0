package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/tool"
)

// Options configures New. A nil *Options means the defaults.
type Options struct {
	// Name and Version identify the server in initialize. Defaults
	// "aibuddy" and "dev".
	Name, Version string
	// Instructions are sent to the client in initialize; default: the
	// set's runtime instructions.
	Instructions string
	// Logger receives server activity; default discards. In stdio mode it
	// must not write to stdout.
	Logger *slog.Logger
	// NewCallID mints the toolCallId of each call (MCP has none of its
	// own). Default: "mcp-<unix-nanos>-<n>".
	NewCallID func() string
	// ProgressInterval is the least time between two progress
	// notifications carrying output (heartbeats always go out). Default
	// 250 ms.
	ProgressInterval time.Duration
}

// Meta keys aibuddy sets on a CallToolResult's _meta.
const (
	MetaStage      = "aibuddy/stage"      // failure stage of an error result
	MetaEvidence   = "aibuddy/evidence"   // the tool's evidence object
	MetaToolCallID = "aibuddy/toolCallId" // the minted toolCallId
)

// New returns an MCP server whose tools are the tools of set.
func New(set *capability.Set, opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "aibuddy"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Instructions == "" {
		o.Instructions = set.Instructions()
	}
	if o.NewCallID == nil {
		var n atomic.Int64
		o.NewCallID = func() string {
			return "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(n.Add(1), 10)
		}
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = 250 * time.Millisecond
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version},
		&mcp.ServerOptions{Instructions: o.Instructions, Logger: o.Logger})
	for _, t := range set.Tools() {
		srv.AddTool(describe(t), handler(set, t.Name(), &o))
	}
	return srv
}

func describe(t *tool.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()}
	if a := t.Annotations(); a != nil {
		mt.Title = a.Title
		mt.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return mt
}

func handler(set *capability.Set, name string, o *Options) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := &tool.Call{ID: o.NewCallID(), Name: name, Input: req.Params.Arguments}
		var p *progress
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			p = &progress{ctx: ctx, session: req.Session, token: token, interval: o.ProgressInterval}
			call.Events = p.send
		}
		res := set.Call(ctx, call)
		if p != nil {
			p.flush()
		}
		return toMCP(call.ID, res), nil
	}
}

// progress turns a call's transient events into notifications/progress.
// Output chunks are buffered and sent at most once per interval (and once
// more when the call ends), each message holding the output since the last
// one, clipped to its last 1,000 characters. Heartbeats go out at once.
type progress struct {
	ctx      context.Context
	session  *mcp.ServerSession
	token    any
	interval time.Duration

	mu      sync.Mutex
	n       float64
	lastOut time.Time
	pending []byte
}

func (p *progress) send(e tool.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case tool.EventHeartbeat:
		p.notify("running")
	case tool.EventProgress:
		p.notify(e.Message)
	case tool.EventStdout, tool.EventStderr:
		p.pending = append(p.pending, e.Data...)
		if len(p.pending) > 8<<10 {
			p.pending = append(p.pending[:0], p.pending[len(p.pending)-4<<10:]...)
		}
		if time.Since(p.lastOut) >= p.interval {
			p.flushLocked()
		}
	}
}

// flush sends buffered output, if any.
func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

func (p *progress) flushLocked() {
	if len(p.pending) == 0 {
		return
	}
	msg := clip(strings.ToValidUTF8(string(p.pending), "\uFFFD"), 1000)
	p.pending = p.pending[:0]
	p.lastOut = time.Now()
	p.notify(msg)
}

func (p *progress) notify(msg string) {
	p.n++
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: p.n, Message: msg})
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n:])
}

func toMCP(id string, res *tool.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{}}
	for _, c := range res.Content {
		switch c.Type {
		case tool.ImageContent:
			out.Content = append(out.Content, &mcp.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	meta := mcp.Meta{MetaToolCallID: id}
	if res.IsError {
		meta[MetaStage] = string(res.Stage)
	}
	if len(res.Evidence) > 0 {
		if b, err := json.Marshal(res.Evidence); err == nil {
			meta[MetaEvidence] = json.RawMessage(b)
		} else {
			meta[MetaEvidence] = fmt.Sprintf("unencodable evidence: %v", err)
		}
	}
	out.Meta = meta
	return out
}
