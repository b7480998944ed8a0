package chatmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// emptySchema stands for a tool without an input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// geminiEmpty is ForGemini's projection of a schema with no properties:
// Gemini refuses an OBJECT without properties ("should be non-empty for
// OBJECT type"), so such a function is sent without parameters, which the
// chat completions API reads as "an empty parameter list".
var geminiEmpty = json.RawMessage(`{"properties":{},"type":"object"}`)

type projection struct {
	params   json.RawMessage // nil: send no parameters
	err      error
	decision provider.SchemaDecision
}

// projector projects tool schemas for the route's dialect
// (toolschema.ForOpenAI, or toolschema.ForGemini for Gemini's
// OpenAI-compatible endpoint) and remembers each result, so the tools
// array is byte-stable across steps and lossy rewrites are logged once per
// tool and schema.
type projector struct {
	log      *slog.Logger
	dialect  provider.SchemaDialect // DialectOpenAI or DialectGemini
	refDepth int                    // Gemini: nesting of a recursive $ref before it is cut
	mu       sync.Mutex
	seen     map[string]projection // name + "\x00" + schema → projection
}

// project returns the parameters for a tool's full input schema (nil:
// leave the parameters field out). An error wraps toolschema.ErrSchema:
// the schema is not usable.
func (p *projector) project(name string, schema json.RawMessage) (json.RawMessage, error) {
	pr := p.projection(name, schema)
	return pr.params, pr.err
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
	var (
		out   json.RawMessage
		notes []toolschema.Note
		err   error
	)
	pr := projection{decision: provider.SchemaDecision{Tool: name, Dialect: string(p.dialect)}}
	if p.dialect == provider.DialectGemini {
		out, notes, err = toolschema.ForGemini(schema, toolschema.GeminiOptions{RefDepth: p.refDepth})
		if err == nil && bytes.Equal(out, geminiEmpty) {
			out = nil
		}
	} else {
		out, notes, err = toolschema.ForOpenAI(schema)
	}
	pr.params, pr.err = out, err
	if err != nil {
		pr.err = fmt.Errorf("chatmodel: tool %q: %w", name, err)
		pr.decision.Err = pr.err
	}
	for _, n := range notes {
		if n.Lossy {
			p.log.Warn("chatmodel: tool schema projected with loss", "tool", name, "dialect", string(p.dialect), "note", n.String())
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

// ExplainSchemas says, per tool the request would carry (deferred tools
// are never sent on this route), which dialect its schema is projected
// into and what that lost (provider.SchemaExplainer).
func (m *Model) ExplainSchemas(tools []provider.Tool) []provider.SchemaDecision {
	var out []provider.SchemaDecision
	for _, t := range tools {
		if t.Deferred {
			continue
		}
		out = append(out, m.proj.projection(t.Name, t.InputSchema).decision)
	}
	return out
}
