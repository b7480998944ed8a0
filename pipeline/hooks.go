package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/hooks"
	"github.com/aibuddy/aibuddy/tool"
)

// HookAskRecordSuffix keys the record of the confirm exchange a
// PreToolUse hook's "ask" started ("<toolCallId>#hook-ask", Tool
// [ConfirmTool]); the Authorization gate's own is [ConfirmRecordSuffix].
const HookAskRecordSuffix = "#hook-ask"

// EvidenceHooks is the result evidence key listing the hooks that ran
// for a call: [{"event", "command", "where", "decision", "message"?}].
const EvidenceHooks tool.EvidenceKey = "hooks"

// hookNames are the names a call's tool is matched by: its wire name,
// and for an MCP tool Claude Code's mcp__<wire name> too.
func hookNames(ctx context.Context, name string) []string {
	if st := stateOf(ctx); st.set != nil {
		if _, server, ok := st.set.Lookup(name); ok && server != "" {
			return []string{name, "mcp__" + name}
		}
	}
	return []string{name}
}

// preToolUse runs the PreToolUse hooks (after Parameters, before the
// Authorization gate and the path lock: a hook is a check of the call,
// and nobody waits on a file's lock while it decides). A deny, a hook
// failure (fail closed) or a person's refusal after an "ask" stop the
// call at the Authorization stage; "allow" goes on to the gate, whose
// rules still hold; an updatedInput is checked against the schema and
// replaces the input.
func (p *Pipeline) preToolUse(run Run) Middleware {
	return func(next Handler) Handler {
		r := p.opts.Hooks
		if r == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			names := hookNames(ctx, call.Name)
			if len(r.Matching(hooks.PreToolUse, names...)) == 0 {
				return next(ctx, call)
			}
			out := r.Run(ctx, hooks.PreToolUse, hooks.Call{SessionID: run.TaskID, ToolUseID: call.ID, ToolName: call.Name,
				Aliases: names[1:], ToolInput: call.Input})
			if out.Err != nil { // fail closed, whatever the failure
				hint := "the call was not run: PreToolUse hooks fail closed; tell the user"
				var he *hooks.Error
				if errors.As(out.Err, &he) {
					hint = he.Hint()
				}
				return hookEvidence(tool.ErrorResult(tool.Errorf(tool.Authorization, "not run: %s", out.Err.Error()).WithHint(hint), call.Name), out, hooks.PreToolUse)
			}
			switch out.Decision {
			case hooks.Deny:
				return hookEvidence(tool.ErrorResult(tool.Errorf(tool.Authorization, "not run: blocked by %s: %s", out.By, out.Reason).
					WithHint("do not try to reach it another way: the hook is the user's policy; choose another approach or ask the user"), call.Name), out, hooks.PreToolUse)
			case hooks.Ask:
				if res := p.hookAsk(ctx, run, call, out); res != nil {
					return hookEvidence(res, out, hooks.PreToolUse)
				}
			}
			var notes []string
			if out.UpdatedInput != nil {
				if t, ok := stateOf(ctx).lookup(call.Name); ok {
					if err := t.Validate(out.UpdatedInput); err != nil {
						return hookEvidence(tool.ErrorResult(tool.Errorf(tool.Authorization, "not run: %s replaced the input with one the tool's schema refuses: %v", out.UpdatedInput, err).
							WithHint("tell the user: the hook's updatedInput must fit the tool's schema"), call.Name), out, hooks.PreToolUse)
					}
					ctx = t.Validated(ctx, out.UpdatedInput)
				}
				c := *call
				c.Input = out.UpdatedInput
				call = &c
				notes = append(notes, fmt.Sprintf("[%s replaced the input: %s]", out.By, out.UpdatedInput))
			}
			res := next(ctx, call)
			return hookEvidence(withNotes(res, notes, out.Context), out, hooks.PreToolUse)
		}
	}
}

// postToolUse runs the PostToolUse hooks on a successful, verified
// result, inside the path lock (a formatter rewrites the file before any
// other call may write it, and after the tool's own read-back check,
// which it would otherwise contradict). additionalContext is added to the
// result; a block or a failed hook makes it a Verification-stage error
// that keeps the tool's text (the effect stands).
func (p *Pipeline) postToolUse(run Run) Middleware {
	return func(next Handler) Handler {
		r := p.opts.Hooks
		if r == nil {
			return next
		}
		return func(ctx context.Context, call *tool.Call) *tool.Result {
			res := next(ctx, call)
			if res == nil || res.IsError {
				return res
			}
			names := hookNames(ctx, call.Name)
			if len(r.Matching(hooks.PostToolUse, names...)) == 0 {
				return res
			}
			resp, _ := json.Marshal(map[string]any{"text": resultText(res), "evidence": res.Evidence})
			out := r.Run(ctx, hooks.PostToolUse, hooks.Call{SessionID: run.TaskID, ToolUseID: call.ID, ToolName: call.Name,
				Aliases: names[1:], ToolInput: call.Input, ToolResponse: resp})
			var problems []string
			hint := ""
			for _, b := range out.Blocks {
				problems = append(problems, fmt.Sprintf("blocked by %s: %s", b.Hook, b.Text))
				hint = "the call ran and its effect stands; act on what the hook says (fix what it names) before going on"
			}
			for _, f := range out.Failed {
				problems = append(problems, f.Error())
				hint = f.Hint()
			}
			res = hookEvidence(withNotes(res, nil, out.Context), out, hooks.PostToolUse)
			if len(problems) == 0 {
				return res
			}
			e := tool.Errorf(tool.Verification, "%s", strings.Join(problems, "; ")).WithHint(hint)
			e.Tool = call.Name
			return &tool.Result{IsError: true, Stage: tool.Verification, Evidence: res.Evidence,
				Content: append([]tool.Content{{Type: tool.TextContent, Text: e.Error()}}, res.Content...)}
		}
	}
}

// hookAsk puts a call a PreToolUse hook asked about to a person: nil
// when approved, else the refusal. The exchange is recorded as
// "<toolCallId>#hook-ask" and reported to Run.OnDecision.
func (p *Pipeline) hookAsk(ctx context.Context, run Run, call *tool.Call, out *hooks.Outcome) *tool.Result {
	reason := out.Reason
	if reason == "" {
		reason = "(no reason given)"
	}
	target := string(call.Input)
	if len(target) > 200 {
		target = target[:200] + "…"
	}
	a := approval.Action{CallID: call.ID, Tool: call.Name, Input: call.Input, Target: target, Scope: "asked by a PreToolUse hook",
		Consequence: "runs the call as shown", Reasons: []string{fmt.Sprintf("%s asks: %s", out.By, reason)},
		Rule: out.By.Where, Fix: "change or remove the hook in the settings"}
	ex := approval.Exchange{Action: a, AskedAt: p.opts.Now()}
	if run.OnAsk != nil {
		run.OnAsk(ctx, a)
	}
	if p.opts.Confirmer == nil {
		ex.Err = approval.ErrNoConfirmer
	} else {
		ex.Decision, ex.Err = p.opts.Confirmer.Confirm(ctx, a)
	}
	ex.At = p.opts.Now()
	p.recordHookAsk(ctx, run, ex)
	if run.OnDecision != nil {
		run.OnDecision(ctx, ex)
	}
	switch {
	case ex.Err != nil:
		return tool.ErrorResult(tool.Errorf(tool.Authorization, "not run: %s asks a person to confirm this call (%s), and none could be: %v",
			out.By, reason, ex.Err).WithHint("do not retry it unconfirmed; explain to the user what you wanted to do and why"), call.Name)
	case !ex.Decision.Approved:
		msg := "the user rejected this action; it was not run"
		if n := strings.TrimSpace(ex.Decision.Note); n != "" {
			msg += "; they said: " + n
		}
		return tool.ErrorResult(tool.Errorf(tool.Authorization, "%s", msg).
			WithHint("do not repeat it; choose another approach or ask the user what they want"), call.Name)
	}
	return nil
}

// recordHookAsk writes a hook's confirm exchange as recordExchange writes
// the gate's, under HookAskRecordSuffix.
func (p *Pipeline) recordHookAsk(ctx context.Context, run Run, ex approval.Exchange) {
	p.putExchange(ctx, run, ex, HookAskRecordSuffix)
}

// withNotes returns res with the hooks' texts for the model appended.
func withNotes(res *tool.Result, notes []string, ctxNotes []hooks.Note) *tool.Result {
	if res == nil || len(notes)+len(ctxNotes) == 0 {
		return res
	}
	for _, n := range ctxNotes {
		notes = append(notes, fmt.Sprintf("[%s adds:]\n%s", n.Hook, n.Text))
	}
	out := *res
	out.Content = append(append([]tool.Content(nil), res.Content...), tool.Content{Type: tool.TextContent, Text: strings.Join(notes, "\n")})
	return &out
}

// hookEvidence adds the hooks that ran to res's evidence (EvidenceHooks).
func hookEvidence(res *tool.Result, out *hooks.Outcome, ev hooks.Event) *tool.Result {
	if res == nil || len(out.Ran) == 0 {
		return res
	}
	msgs := map[*hooks.Hook]string{}
	for _, m := range out.Messages {
		msgs[m.Hook] = m.Text
	}
	failed := map[*hooks.Hook]bool{}
	for _, f := range out.Failed {
		failed[f.Hook] = true
	}
	blocked := map[*hooks.Hook]bool{}
	for _, b := range out.Blocks {
		blocked[b.Hook] = true
	}
	var list []map[string]any
	for _, h := range out.Ran {
		e := map[string]any{"event": string(ev), "command": h.Command, "where": h.Where}
		switch {
		case failed[h]:
			e["decision"] = "failed"
		case blocked[h]:
			e["decision"] = string(hooks.Block)
		case out.By == h:
			e["decision"] = string(out.Decision)
		default:
			e["decision"] = "proceed"
		}
		if m := msgs[h]; m != "" {
			e["message"] = m
		}
		list = append(list, e)
	}
	// PostToolUse hooks sit inside PreToolUse ones: theirs came later.
	if prev, ok := res.Evidence[EvidenceHooks].([]map[string]any); ok {
		list = append(list, prev...)
	}
	cp := *res
	cp.Evidence = tool.Evidence{}
	for k, v := range res.Evidence {
		cp.Evidence[k] = v
	}
	cp.Evidence[EvidenceHooks] = list
	return &cp
}

// resultText joins a result's text blocks.
func resultText(res *tool.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == tool.TextContent {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(c.Text)
		}
	}
	return b.String()
}
