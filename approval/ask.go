package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// ServiceUserInput is the service name under which a run injects its
// [Asker] (capability.RunSpec.Services).
const ServiceUserInput = "user_input"

// GroupKey is the tool key of the interaction group.
const GroupKey = "interaction"

// Question is what ask_user_question puts to the user.
type Question struct {
	Text    string   // the question, one or more sentences
	Options []string // choices offered; empty means free text
}

// Answer is the user's reply.
type Answer struct {
	Text     string // the chosen option or the free-text reply
	Declined bool   // the user declined to answer or cancelled
}

// Asker puts a question to a person and waits for the reply. Ask must
// return when ctx is done.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, q Question) (Answer, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

const askSchema = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "minLength": 1, "description": "The question for the user, self-contained."},
    "options": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 10,
      "description": "Optional choices; the user picks one. Omit for a free-text answer."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

// AskUserQuestion returns the ask_user_question tool bound to a.
//
// Result: "The user answered: <text>" on success. A declined question is a
// successful result saying so (the user's choice is authoritative). An
// Asker error that is a *tool.Error keeps its stage (an Asker that cannot
// reach anyone answers at Authorization); any other is Execution.
func AskUserQuestion(a Asker) *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name: "ask_user_question",
		Description: "Ask the user a question and wait for the answer. Use it when a decision " +
			"belongs to the user or the request is ambiguous; offer options when the choices are known.",
		InputSchema: json.RawMessage(askSchema),
		Annotations: &tool.Annotations{Title: "Ask the user", ReadOnlyHint: true},
		Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			in, err := tool.Decode[struct {
				Question string   `json:"question"`
				Options  []string `json:"options"`
			}](call)
			if err != nil {
				return nil, err
			}
			ans, err := a.Ask(ctx, Question{Text: in.Question, Options: in.Options})
			if err != nil {
				var te *tool.Error
				if errors.As(err, &te) {
					return nil, err // the asker chose the stage (e.g. Authorization: nobody can be asked)
				}
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, tool.Errorf(tool.Execution, "the question was cancelled before the user answered: %w", err)
				}
				return nil, tool.Errorf(tool.Execution, "could not ask the user: %w", err).
					WithHint("continue without the answer only if the decision is not the user's")
			}
			if ans.Declined {
				return tool.TextWith("The user declined to answer.", tool.Evidence{"declined": true}), nil
			}
			if len(in.Options) > 0 && !contains(in.Options, ans.Text) {
				return tool.TextWith(fmt.Sprintf("The user answered outside the options: %s", ans.Text),
					tool.Evidence{"answer": ans.Text}), nil
			}
			return tool.TextWith("The user answered: "+ans.Text, tool.Evidence{"answer": ans.Text}), nil
		},
	})
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if strings.TrimSpace(x) == strings.TrimSpace(s) {
			return true
		}
	}
	return false
}

// Group is the interaction tool group. It requires the ServiceUserInput
// service; without it the run has no ask_user_question.
func Group() registry.Group {
	return registry.Group{
		Key:      GroupKey,
		Names:    []string{"ask_user_question"},
		Requires: registry.Requirements{Services: []string{ServiceUserInput}},
		Build: func(env registry.Env) ([]*tool.Tool, error) {
			a, ok := registry.Service[Asker](env, ServiceUserInput)
			if !ok {
				return nil, fmt.Errorf("service %q does not implement approval.Asker", ServiceUserInput)
			}
			return []*tool.Tool{AskUserQuestion(a)}, nil
		},
		Instructions: "When a choice belongs to the user, ask with ask_user_question instead of guessing.",
	}
}

// Meta is the interaction group's metadata.
var Meta = registry.Meta{Key: GroupKey, DisplayName: "Ask the user", Category: "interaction",
	Description: "Questions to the user, answered in the terminal or through the MCP host."}
