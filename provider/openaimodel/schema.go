package openaimodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// projection is one tool's parameters as sent.
type projection struct {
	params json.RawMessage
	strict bool
	err    error
}

// projector projects tool schemas with provider/toolschema and remembers
// each result, so the tools array is byte-stable across steps and lossy
// rewrites are logged once per tool and schema.
type projector struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]projection // name + "\x00" + schema → projection
}

// project returns the parameters for a tool's full input schema:
// toolschema.ForOpenAIStrict with "strict": true when the schema can be
// made strict, else toolschema.ForOpenAI with "strict": false (sent
// explicitly: the Responses API otherwise treats function tools as strict).
// An empty schema stands for {"type":"object","properties":{}}. An error
// wraps toolschema.ErrSchema: the schema is not usable (tool.Define should
// have refused it).
func (p *projector) project(name string, schema json.RawMessage) (json.RawMessage, bool, error) {
	if len(schema) == 0 {
		schema = emptySchema
	}
	key := name + "\x00" + string(schema)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.seen[key]; ok {
		return pr.params, pr.strict, pr.err
	}
	var pr projection
	out, notes, err := toolschema.ForOpenAIStrict(schema)
	switch {
	case err == nil:
		pr = projection{params: out, strict: true}
	case errors.Is(err, toolschema.ErrNotStrict):
		p.log.Info("openaimodel: tool sent non-strict", "tool", name, "reason", err.Error())
		out, notes, err = toolschema.ForOpenAI(schema)
		pr = projection{params: out, err: err}
	default:
		pr = projection{err: err}
	}
	if pr.err != nil {
		pr.err = fmt.Errorf("openaimodel: tool %q: %w", name, pr.err)
	}
	for _, n := range notes {
		if n.Lossy {
			p.log.Warn("openaimodel: tool schema projected with loss", "tool", name, "note", n.String())
		}
	}
	if p.seen == nil {
		p.seen = map[string]projection{}
	}
	p.seen[key] = pr
	return pr.params, pr.strict, pr.err
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
