package agent_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider"
)

func u(blocks ...provider.Block) provider.Message {
	return provider.Message{Role: provider.User, Blocks: blocks}
}

func a(blocks ...provider.Block) provider.Message {
	return provider.Message{Role: provider.Assistant, Blocks: blocks}
}

func res(id, text string, isErr bool) provider.Block {
	return provider.Block{Type: provider.ToolResult, ToolUseID: id, IsError: isErr,
		Content: []provider.Block{{Type: provider.Text, Text: text}}}
}

func synth(id string) provider.Block { return res(id, agent.NoResultText, true) }

// TestRepair holds the 7-pairing.md cases in the neutral transcript; each
// repaired transcript must also pass Validate for every provider shape.
func TestRepair(t *testing.T) {
	tu := func(id string) provider.Block { return use(id, "execute", `{"command":"x"}`) }
	cases := []struct {
		name string
		in   []provider.Message
		want []provider.Message
	}{
		{
			name: "valid transcript unchanged",
			in:   []provider.Message{u(say("go")), a(say("ok"), tu("t1")), u(res("t1", "out", false)), a(say("done"))},
			want: []provider.Message{u(say("go")), a(say("ok"), tu("t1")), u(res("t1", "out", false)), a(say("done"))},
		},
		{
			// BH-051: tu_1 finished, tu_2 cancelled while running, tu_3 never
			// started; then the user types a new message.
			name: "BH-051 interrupted parallel calls",
			in: []provider.Message{
				u(say("task")),
				a(tu("tu_1"), tu("tu_2"), tu("tu_3")),
				u(res("tu_1", "real output", false), res("tu_2", "cancelled by user after 3.1 s\npartial", true)),
				u(say("new message")),
			},
			want: []provider.Message{
				u(say("task")),
				a(tu("tu_1"), tu("tu_2"), tu("tu_3")),
				u(res("tu_1", "real output", false), res("tu_2", "cancelled by user after 3.1 s\npartial", true), synth("tu_3"), say("new message")),
			},
		},
		{
			// BH-053: a summary recorded between A(tool_use tu_5) and its result.
			name: "BH-053 summary inside a pair",
			in: []provider.Message{
				u(say("task")),
				a(tu("tu_5")),
				u(say("[summary of earlier work]")),
				u(res("tu_5", "real", false)),
			},
			want: []provider.Message{
				u(say("task")),
				a(tu("tu_5")),
				u(res("tu_5", "real", false), say("[summary of earlier work]")),
			},
		},
		{
			// BH-054 (Responses): the oldest items, with function_call
			// call_A, were dropped; its output was kept.
			name: "BH-054 orphan output",
			in: []provider.Message{
				u(res("call_A", "old output", false), say("continue")),
				a(say("ok")),
			},
			want: []provider.Message{
				u(say("[Output of an earlier tool call call_A whose request is no longer in context]\nold output"), say("continue")),
				a(say("ok")),
			},
		},
		{
			// BH-054 (chat): tool_calls [c1, c2] followed by a tool message
			// for c1 only.
			name: "BH-054 missing tool message",
			in:   []provider.Message{u(say("go")), a(tu("c1"), tu("c2")), u(res("c1", "one", false)), u(say("next"))},
			want: []provider.Message{u(say("go")), a(tu("c1"), tu("c2")), u(res("c1", "one", false), synth("c2"), say("next"))},
		},
		{
			name: "duplicate result and repeated tool_use id",
			in:   []provider.Message{u(say("go")), a(tu("d1")), u(res("d1", "first", false)), a(tu("d1")), u(res("d1", "second", false))},
			want: []provider.Message{u(say("go")), a(tu("d1")), u(res("d1", "first", false))},
		},
		{
			name: "cut at the start: first kept message is the model's",
			in:   []provider.Message{a(tu("z1")), u(res("z1", "out", false))},
			want: []provider.Message{u(say(agent.OmittedText)), a(tu("z1")), u(res("z1", "out", false))},
		},
		{
			name: "trailing tool_use with no result (crash mid-turn)",
			in:   []provider.Message{u(say("go")), a(say("running"), tu("y1"))},
			want: []provider.Message{u(say("go")), a(say("running"), tu("y1")), u(synth("y1"))},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := json.Marshal(c.in)
			got := agent.Repair(c.in)
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("Repair (-want +got):\n%s", d)
			}
			if after, _ := json.Marshal(c.in); string(after) != string(before) {
				t.Error("Repair modified its input")
			}
			for _, sh := range shapes {
				if err := agent.Validate(got, sh); err != nil {
					t.Errorf("%s: %v", sh, err)
				}
				if err := agent.Validate(agent.Rebuild(c.in, nil), sh); err != nil {
					t.Errorf("rebuilt, %s: %v", sh, err)
				}
			}
		})
	}
}

func TestValidateFindsBrokenPairs(t *testing.T) {
	tu := use("t1", "ls", `{}`)
	cases := []struct {
		name string
		msgs []provider.Message
		bad  []agent.Shape // shapes that must reject it
	}{
		{"missing result", []provider.Message{u(say("go")), a(tu), u(say("next"))}, shapes},
		{"orphan result", []provider.Message{u(res("x", "o", false))}, shapes},
		{"result not right after", []provider.Message{u(say("go")), a(tu), u(say("s")), a(say("k")), u(res("t1", "o", false))},
			[]agent.Shape{agent.Anthropic, agent.OpenAIChat}},
		{"text before results", []provider.Message{u(say("go")), a(tu), u(say("s"), res("t1", "o", false))},
			[]agent.Shape{agent.Anthropic, agent.OpenAIChat}},
		{"two results", []provider.Message{u(say("go")), a(tu), u(res("t1", "o", false), res("t1", "p", false))}, shapes},
		{"starts with the model", []provider.Message{a(say("hi"))}, []agent.Shape{agent.Anthropic}},
	}
	for _, c := range cases {
		for _, sh := range c.bad {
			if err := agent.Validate(c.msgs, sh); !errors.Is(err, agent.ErrPairing) {
				t.Errorf("%s, %s: Validate = %v, want ErrPairing", c.name, sh, err)
			}
		}
	}
}

// TestRebuildProjectsInteractions: completed human interactions become
// user text; an uncompleted one keeps its pair; compacted results show
// their compact form.
func TestRebuildProjectsInteractions(t *testing.T) {
	ask := use("q", "ask_user_question", `{"question":"Which?","options":["a","b"]}`)
	in := []provider.Message{
		u(say("task")),
		a(say("asking"), ask, use("l", "ls", `{}`)),
		u(res("q", "The user answered: b", false), res("l", "files", false)),
		a(use("q2", "ask_user_question", `{"question":"Sure?"}`)),
		u(res("q2", "Execution error in ask_user_question: cancelled", true)),
		a(use("q3", "ask_user_question", `{"question":"Name?"}`)),
		u(res("q3", "The user declined to answer.", false)),
	}
	got := agent.Rebuild(in, &agent.RebuildOptions{Compacted: func(id string) (agent.Compacted, bool) {
		if id == "l" {
			return agent.Compacted{Text: "files (trimmed)", Kind: "trim", Pointer: "compacted_outputs/t/l.json"}, true
		}
		return agent.Compacted{}, false
	}})
	want := []provider.Message{
		u(say("task")),
		a(say("asking"), use("l", "ls", `{}`)),
		u(res("l", "files (trimmed)\n[compacted (trim); the full result is kept at compacted_outputs/t/l.json: view_tool_call {\"id\": \"l\"} recovers it]", false),
			say(`The user was asked: "Which?" (options: a; b). They answered: b`)),
		a(use("q2", "ask_user_question", `{"question":"Sure?"}`)),
		u(res("q2", "Execution error in ask_user_question: cancelled", true), say(`The user was asked: "Name?". They declined to answer.`)),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Rebuild (-want +got):\n%s", d)
	}
	for _, sh := range shapes {
		if err := agent.Validate(got, sh); err != nil {
			t.Errorf("%s: %v", sh, err)
		}
	}
	if names := agent.ToolNames(got); cmp.Diff([]string{"ls", "ask_user_question"}, names) != "" {
		t.Errorf("ToolNames = %v", names)
	}
}
