package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
)

// FormElicitor turns a server's form elicitation into questions for a
// person through a (the ask_user_question interaction of `aibuddy run`:
// approval.Terminal). Each field of the requested schema (a flat object,
// as the MCP spec allows: string, number, integer, boolean, enum) is one
// question headed by the server's message, its required fields first;
// a boolean offers yes and no, an enum its values. Declining any question
// declines the whole form (action "decline"); an answer that does not fit
// its field (a number that does not parse) is asked once more, then
// declines. Errors: the asker's (ctx done, input ended).
func FormElicitor(a approval.Asker) Elicitor {
	return func(ctx context.Context, e Elicitation) (*mcp.ElicitResult, error) {
		fields, required := formFields(e.Params.RequestedSchema)
		head := fmt.Sprintf("MCP server %s asks", e.Server)
		if e.Tool != "" {
			head += fmt.Sprintf(" (during %s)", e.Tool)
		}
		head += ": " + strings.TrimSpace(e.Params.Message)
		content := map[string]any{}
		for _, f := range fields {
			q := approval.Question{Text: head}
			label := cmpOr(f.title, f.name)
			if f.desc != "" {
				label += " — " + f.desc
			}
			if !slices.Contains(required, f.name) {
				label += " (optional)"
			}
			q.Text += "\n" + label
			switch {
			case f.typ == "boolean":
				q.Options = []string{"yes", "no"}
			case f.typ == "array":
				label += " (one or more of: " + strings.Join(f.enum, ", ") + "; comma-separated)"
				q.Text = head + "\n" + label
			case len(f.enum) > 0:
				q.Options = f.enum
			}
			var v any
			for try := 0; try < 2 && v == nil; try++ {
				ans, err := a.Ask(ctx, q)
				if err != nil {
					return nil, err
				}
				if ans.Declined {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				v = f.parse(ans.Text)
			}
			if v == nil {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			content[f.name] = v
		}
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type formField struct {
	name, typ, title, desc string
	enum                   []string
}

// parse converts a typed answer to the field's type; nil when it does not
// fit.
func (f formField) parse(s string) any {
	s = strings.TrimSpace(s)
	switch f.typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "yes", "y", "true":
			return true
		case "no", "n", "false":
			return false
		}
		return nil
	case "integer":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		return nil
	case "number":
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return n
		}
		return nil
	case "array": // several of the options, comma-separated
		var picked []any
		for _, p := range strings.Split(s, ",") {
			p = strings.TrimSpace(p)
			if len(f.enum) > 0 && !slices.Contains(f.enum, p) {
				return nil
			}
			picked = append(picked, p)
		}
		return picked
	}
	if len(f.enum) > 0 && !slices.Contains(f.enum, s) {
		return nil
	}
	return s
}

// formFields reads a requested schema's top-level properties, required
// ones first, each group by name.
func formFields(schema any) ([]formField, []string) {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	var required []string
	switch r := m["required"].(type) {
	case []any:
		for _, x := range r {
			if s, ok := x.(string); ok {
				required = append(required, s)
			}
		}
	case []string:
		required = r
	}
	var out []formField
	for name, p := range props {
		pm, _ := p.(map[string]any)
		f := formField{name: name}
		f.typ, _ = pm["type"].(string)
		f.title, _ = pm["title"].(string)
		f.desc, _ = pm["description"].(string)
		switch en := pm["enum"].(type) {
		case []any:
			for _, x := range en {
				f.enum = append(f.enum, fmt.Sprint(x))
			}
		case []string:
			f.enum = en
		}
		if items, ok := pm["items"].(map[string]any); ok && f.typ == "array" { // multi-select enum
			if en, ok := items["enum"].([]any); ok {
				for _, x := range en {
					f.enum = append(f.enum, fmt.Sprint(x))
				}
			}
			if alts, ok := items["anyOf"].([]any); ok { // titled multi-select
				for _, x := range alts {
					if xm, ok := x.(map[string]any); ok {
						if c, ok := xm["const"].(string); ok {
							f.enum = append(f.enum, c)
						}
					}
				}
			}
		}
		if one, ok := pm["oneOf"].([]any); ok { // titled enum (2025-11-25)
			for _, x := range one {
				if xm, ok := x.(map[string]any); ok {
					if c, ok := xm["const"].(string); ok {
						f.enum = append(f.enum, c)
					}
				}
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := slices.Contains(required, out[i].name), slices.Contains(required, out[j].name)
		if ri != rj {
			return ri
		}
		return out[i].name < out[j].name
	})
	return out, required
}

// Exchange is the question and its answer as a completed human exchange
// (what a run records and turns into user-role text): the action is the
// call (its ID, tool and input) with the server as scope and the question
// as consequence, approved when the user accepted, and the note the
// answer's content, e.g. "Approved: fx__apply_change question of MCP
// server fx (MCP server fx): confirm deploy to staging?\nThe user said:
// answered {"confirm":true}".
func (e Elicitation) Exchange(res *mcp.ElicitResult, asked, at time.Time) approval.Exchange {
	a := approval.Action{Target: "question of MCP server " + e.Server, Scope: "MCP server " + e.Server,
		Consequence: strings.TrimSpace(e.Params.Message)}
	if e.Call != nil {
		a.CallID, a.Tool, a.Input = e.Call.ID, e.Call.Name, e.Call.Input
	}
	d := approval.Decision{Approved: res != nil && res.Action == "accept"}
	switch {
	case res == nil:
	case d.Approved && len(res.Content) > 0:
		b, _ := json.Marshal(res.Content)
		d.Note = "answered " + string(b)
	case !d.Approved:
		d.Note = map[string]string{"decline": "declined", "cancel": "cancelled"}[res.Action]
	}
	return approval.Exchange{Action: a, Decision: d, AskedAt: asked, At: at}
}
