package chatmodel

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// emptySchema stands for a tool without an input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

type projection struct {
	params json.RawMessage
	err    error
}

// projector projects tool schemas with toolschema.ForOpenAI and remembers
// each result, so the tools array is byte-stable across steps and lossy
// rewrites are logged once per tool and schema.
type projector struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]projection // name + "\x00" + schema → projection
}

// project returns the parameters for a tool's full input schema. An error
// wraps toolschema.ErrSchema: the schema is not usable.
func (p *projector) project(name string, schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 {
		schema = emptySchema
	}
	key := name + "\x00" + string(schema)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.seen[key]; ok {
		return pr.params, pr.err
	}
	out, notes, err := toolschema.ForOpenAI(schema)
	pr := projection{params: out, err: err}
	if err != nil {
		pr.err = fmt.Errorf("chatmodel: tool %q: %w", name, err)
	}
	for _, n := range notes {
		if n.Lossy {
			p.log.Warn("chatmodel: tool schema projected with loss", "tool", name, "note", n.String())
		}
	}
	if p.seen == nil {
		p.seen = map[string]projection{}
	}
	p.seen[key] = pr
	return pr.params, pr.err
}
