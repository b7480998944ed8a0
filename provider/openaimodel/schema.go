package openaimodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// projection is one tool's parameters as sent, and the decision behind
// them.
type projection struct {
	params   json.RawMessage
	strict   bool
	err      error
	decision provider.SchemaDecision
}

// projector projects tool schemas with provider/toolschema and remembers
// each result, so the tools array is byte-stable across steps and lossy
// rewrites are logged once per tool and schema.
type projector struct {
	log  *slog.Logger
	mode provider.StrictMode
	mu   sync.Mutex
	seen map[string]projection // name + "\x00" + schema → projection
}

// project returns the parameters for a tool's full input schema:
// toolschema.ForOpenAIStrictWith with "strict": true when the schema fits
// strict mode's subset without loss (and, with provider.StrictExact,
// without rewrites), else toolschema.ForOpenAI with "strict": false (sent
// explicitly: the Responses API otherwise treats function tools as
// strict), the reason logged at Info and kept in the decision (case
// BH-093). An empty schema stands for {"type":"object","properties":{}}.
// An error wraps toolschema.ErrSchema: the schema is not usable
// (tool.Define should have refused it).
func (p *projector) project(name string, schema json.RawMessage) (json.RawMessage, bool, error) {
	pr := p.projection(name, schema)
	return pr.params, pr.strict, pr.err
}

func (p *projector) projection(name string, schema json.RawMessage) projection {
	if len(schema) == 0 {
		schema = emptySchema
	}
	key := name + "\x00" + string(schema)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.seen[key]; ok {
		return pr
	}
	pr := projection{decision: provider.SchemaDecision{Tool: name, Dialect: "openai"}}
	var (
		out   json.RawMessage
		notes []toolschema.Note
		err   error
	)
	if p.mode == provider.StrictOff {
		err = fmt.Errorf("%w: strict mode off in settings (provider.openaiStrict)", toolschema.ErrNotStrict)
	} else {
		out, notes, err = toolschema.ForOpenAIStrictWith(schema, toolschema.StrictOptions{NoRewrite: p.mode == provider.StrictExact})
	}
	switch {
	case err == nil:
		pr.params, pr.strict = out, true
		pr.decision.Dialect, pr.decision.Strict = "openai-strict", true
	case errors.Is(err, toolschema.ErrNotStrict):
		pr.decision.Reason = err.Error()
		p.log.Info("openaimodel: tool sent non-strict", "tool", name, "reason", err.Error())
		out, notes, err = toolschema.ForOpenAI(schema)
		pr.params, pr.err = out, err
	default:
		pr.err = err
	}
	if pr.err != nil {
		pr.err = fmt.Errorf("openaimodel: tool %q: %w", name, pr.err)
		pr.decision.Err = pr.err
	}
	for _, n := range notes {
		if n.Lossy {
			p.log.Warn("openaimodel: tool schema projected with loss", "tool", name, "note", n.String())
			pr.decision.Changes = append(pr.decision.Changes, n.String())
		} else {
			pr.decision.Rewrites = append(pr.decision.Rewrites, n.String())
		}
	}
	if p.seen == nil {
		p.seen = map[string]projection{}
	}
	p.seen[key] = pr
	return pr
}

// ExplainSchemas says, per tool the Responses request would carry on this
// route's strategy (deferred tools on the native path included), whether
// it goes strict and why not (provider.SchemaExplainer).
func (m *Model) ExplainSchemas(tools []provider.Tool) []provider.SchemaDecision {
	var out []provider.SchemaDecision
	for _, t := range tools {
		if t.Deferred && m.strategy != provider.Native {
			continue
		}
		out = append(out, m.proj.projection(t.Name, t.InputSchema).decision)
	}
	return out
}

// restorer undoes the null union of strict schemas in a call's arguments
// (toolschema.RestoreOptional) for the tools of one request that were sent
// strict: name → full schema.
type restorer map[string]json.RawMessage

// args returns the arguments to record for a call of name.
func (r restorer) args(name string, args json.RawMessage) json.RawMessage {
	schema, ok := r[name]
	if !ok {
		return args
	}
	out, err := toolschema.RestoreOptional(schema, args)
	if err != nil {
		return args
	}
	return out
}
