package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/tool"
)

type sessionKey struct{}

// callState is what the gateway hands a call's services through its
// context: the MCP session, the input responses of a retried call, and the
// input requests a service raised.
type callState struct {
	session   *mcp.ServerSession
	responses mcp.InputResponseMap
	requests  mcp.InputRequestMap
}

// withSession puts the MCP session serving a call, and the input responses
// the host sent with a retried call, into its context.
func withSession(ctx context.Context, ss *mcp.ServerSession, responses mcp.InputResponseMap) (context.Context, *callState) {
	st := &callState{session: ss, responses: responses}
	return context.WithValue(ctx, sessionKey{}, st), st
}

// SessionOf returns the MCP session serving the call whose context this is.
func SessionOf(ctx context.Context) (*mcp.ServerSession, bool) {
	st, ok := ctx.Value(sessionKey{}).(*callState)
	if !ok || st.session == nil {
		return nil, false
	}
	return st.session, true
}

// errNeedInput stops a call whose service raised an input request; the
// gateway answers with the requests and the host retries the call with the
// responses (MCP multi round-trip requests, SEP-2322; the SDK fulfils them
// itself for hosts on older protocol versions). Only services that ask
// before any effect may raise it, since the call runs again from the start.
var errNeedInput = errors.New("mcpserver: the call needs input from the host")

// ElicitAsker is the approval.Asker of `aibuddy mcp`: it asks through MCP
// elicitation (MCP spec 2025-06-18, "Elicitation": elicitation/create with
// a form schema) when the host declared the elicitation capability. A host
// without it gets an Authorization-stage error: the question is never
// answered on the user's behalf, and the call never proceeds unasked.
type ElicitAsker struct{}

// Ask implements approval.Asker.
func (ElicitAsker) Ask(ctx context.Context, q approval.Question) (approval.Answer, error) {
	st, ok := ctx.Value(sessionKey{}).(*callState)
	if !ok || st.session == nil {
		return approval.Answer{}, tool.Errorf(tool.Authorization, "no MCP session carries this call, so nobody can be asked").
			WithHint("decide without the user only if the decision is not theirs; otherwise stop and say what you need")
	}
	if p := st.session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return approval.Answer{}, tool.Errorf(tool.Authorization, "the MCP host does not support elicitation, so the user cannot be asked here").
			WithHint("ask the user in your reply instead and wait for their answer")
	}
	answer := map[string]any{"type": "string", "title": "Answer", "description": q.Text}
	if len(q.Options) > 0 {
		answer["enum"] = q.Options
	}
	id := "ask-" + digest(q)
	resp, answered := st.responses[id]
	if !answered {
		if st.requests == nil {
			st.requests = mcp.InputRequestMap{}
		}
		st.requests[id] = &mcp.ElicitParams{
			Message: q.Text,
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"answer": answer},
				"required":   []string{"answer"},
			},
		}
		return approval.Answer{}, errNeedInput
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return approval.Answer{}, fmt.Errorf("the host answered input request %s with %T, want an elicitation result", id, resp)
	}
	switch res.Action {
	case "accept":
		s, _ := res.Content["answer"].(string)
		return approval.Answer{Text: s}, nil
	default: // "decline" or "cancel"
		return approval.Answer{Declined: true}, nil
	}
}

// digest names a question stably across the retries of one call.
func digest(q approval.Question) string {
	h := sha256.Sum256([]byte(q.Text + "\x00" + strings.Join(q.Options, "\x00")))
	return hex.EncodeToString(h[:8])
}

// ElicitConfirmer is the approval.Confirmer of `aibuddy mcp`: a high-impact
// action (approval.Policy) is put to the user through MCP elicitation, with
// its target, scope, consequence and reasons, and runs only when approved.
// The action is asked for before any effect, so the call can run again
// with the host's answer (multi round-trip input requests). A host without
// elicitation gets an Authorization-stage refusal: the action never runs
// unasked.
type ElicitConfirmer struct{}

// Confirm implements approval.Confirmer.
func (ElicitConfirmer) Confirm(ctx context.Context, a approval.Action) (approval.Decision, error) {
	st, ok := ctx.Value(sessionKey{}).(*callState)
	if !ok || st.session == nil {
		return approval.Decision{}, tool.Errorf(tool.Authorization, "no MCP session carries this call, so nobody can be asked")
	}
	if p := st.session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		// The gate names the action; this says why nobody was asked.
		return approval.Decision{}, tool.Errorf(tool.Authorization,
			"the MCP host does not support elicitation, so the user cannot be asked here").
			WithHint("ask the user in your reply whether to proceed; they can run it themselves or change aibuddy's approval settings")
	}
	h := sha256.Sum256([]byte(a.Key()))
	id := "confirm-" + hex.EncodeToString(h[:8])
	resp, answered := st.responses[id]
	if !answered {
		if st.requests == nil {
			st.requests = mcp.InputRequestMap{}
		}
		st.requests[id] = &mcp.ElicitParams{
			Message: confirmMessage(a),
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Run exactly this action once."},
					"note":    map[string]any{"type": "string", "title": "Note", "description": "Anything to tell the agent (optional)."},
				},
				"required": []string{"approve"},
			},
		}
		return approval.Decision{}, errNeedInput
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return approval.Decision{}, fmt.Errorf("the host answered input request %s with %T, want an elicitation result", id, resp)
	}
	if res.Action != "accept" {
		// "decline" (the user said no) or "cancel" (the user dismissed
		// the request): not approved; Note is for the user's own words.
		return approval.Decision{Approved: false}, nil
	}
	approved, _ := res.Content["approve"].(bool)
	note, _ := res.Content["note"].(string)
	return approval.Decision{Approved: approved, Note: note}, nil
}

// confirmMessage is the elicitation text of a confirm: the action, then
// the rule that asked and why.
func confirmMessage(a approval.Action) string {
	m := "Approve this action?\n" + a.Summary()
	if a.Rule != "" {
		m += "\nAsked by: " + a.Rule
	}
	for _, r := range a.Reasons {
		m += "\nWhy: " + r
	}
	return m
}
