package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aibuddy/aibuddy/provider"
	"github.com/aibuddy/aibuddy/store"
)

// Compacted is the compact model form of one call's result.
type Compacted struct {
	Text    string           // what later model steps see instead of the full result
	Kind    store.Compaction // trim, summarize or drop
	Pointer string           // recovery pointer (compacted_outputs/<taskId>/<toolCallId>.json); "" for drop
}

// Projector turns one completed human interaction (the tool_use input and
// its successful tool_result) into plain user-role text.
type Projector func(input json.RawMessage, result provider.Block) string

// RebuildOptions configure Rebuild. nil means defaults.
type RebuildOptions struct {
	// Compacted returns the compact form of a call's result; ok false (or
	// a nil func) keeps the result as recorded.
	Compacted func(toolCallID string) (Compacted, bool)
	// Interactions are the human-interaction tools whose completed
	// exchanges become user-role text, by tool name. nil means
	// [DefaultInteractions].
	Interactions map[string]Projector
}

// DefaultInteractions project ask_user_question ("The user was asked: …
// They answered: …") and a model-called confirm tool ("Approved: …" /
// "Rejected: …").
func DefaultInteractions() map[string]Projector {
	return map[string]Projector{
		"ask_user_question": projectAsk,
		"confirm":           projectConfirm,
	}
}

// Rebuild makes the messages of the next request from a raw transcript
// (ARCHITECTURE.md step 8; seed: "Completed human interactions use a
// separate projection"):
//
//   - the transcript is repaired ([Repair]): every tool_use is directly
//     followed by one user message holding its tool_result first;
//   - a completed (non-error) ask_user_question or confirm call loses its
//     tool-call scaffolding: the tool_use leaves the assistant turn, the
//     tool_result leaves the user message, and the exchange is added there
//     as plain text ("The user was asked: "…". They answered: …"); an
//     assistant turn left empty is dropped and neighbours of one role are
//     merged;
//   - a result that compaction replaced appears in its compact form,
//     followed by its recovery pointer and the way to get it back
//     (view_tool_call).
//
// The input is not modified. The output passes [Validate] for every Shape.
func Rebuild(transcript []provider.Message, opts *RebuildOptions) []provider.Message {
	var o RebuildOptions
	if opts != nil {
		o = *opts
	}
	if o.Interactions == nil {
		o.Interactions = DefaultInteractions()
	}
	msgs := Repair(transcript)

	// Human interactions.
	for i := 0; i+1 < len(msgs); i++ {
		m := msgs[i]
		if m.Role != provider.Assistant {
			continue
		}
		next := msgs[i+1]
		var keep []provider.Block
		var texts []provider.Block
		drop := map[string]bool{}
		for _, b := range m.Blocks {
			p, ok := o.Interactions[b.Name]
			if b.Type != provider.ToolUse || !ok {
				keep = append(keep, b)
				continue
			}
			res, found := findResult(next, b.ID)
			if !found || res.IsError {
				keep = append(keep, b) // not completed: the pair stays
				continue
			}
			drop[b.ID] = true
			texts = append(texts, provider.Block{Type: provider.Text, Text: p(b.Input, res)})
		}
		if len(drop) == 0 {
			continue
		}
		var nb []provider.Block
		for _, b := range next.Blocks {
			if b.Type == provider.ToolResult && drop[b.ToolUseID] {
				continue
			}
			nb = append(nb, b)
		}
		// Results first, then the exchanges, then the rest (text).
		k := 0
		for k < len(nb) && nb[k].Type == provider.ToolResult {
			k++
		}
		nb = slices.Concat(nb[:k], texts, nb[k:])
		msgs[i] = provider.Message{Role: provider.Assistant, Blocks: keep}
		msgs[i+1] = provider.Message{Role: provider.User, Blocks: nb}
	}

	// Compacted results.
	if o.Compacted != nil {
		for i, m := range msgs {
			if m.Role != provider.User {
				continue
			}
			for j, b := range m.Blocks {
				if b.Type != provider.ToolResult {
					continue
				}
				c, ok := o.Compacted(b.ToolUseID)
				if !ok {
					continue
				}
				text := c.Text
				switch {
				case c.Pointer != "" && strings.Contains(text, c.Pointer):
					// The compact form already names its recovery.
				case c.Pointer != "":
					text += fmt.Sprintf("\n[compacted (%s); the full result is kept at %s: view_tool_call {\"id\": %q} recovers it]", c.Kind, c.Pointer, b.ToolUseID)
				case c.Kind == store.CompactionDrop:
					text += "\n[dropped as disposable output; not recoverable]"
				default:
					text += fmt.Sprintf("\n[compacted (%s)]", c.Kind)
				}
				nb := b
				nb.Content = []provider.Block{{Type: provider.Text, Text: text}}
				msgs[i].Blocks[j] = nb
			}
		}
	}
	return Repair(msgs)
}

// findResult returns the tool_result for id in m.
func findResult(m provider.Message, id string) (provider.Block, bool) {
	if m.Role != provider.User {
		return provider.Block{}, false
	}
	for _, b := range m.Blocks {
		if b.Type == provider.ToolResult && b.ToolUseID == id {
			return b, true
		}
	}
	return provider.Block{}, false
}

func resultText(b provider.Block) string {
	var parts []string
	for _, c := range b.Content {
		switch c.Type {
		case provider.Text:
			parts = append(parts, c.Text)
		case provider.Image:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		}
	}
	return strings.Join(parts, "\n")
}

func projectAsk(input json.RawMessage, res provider.Block) string {
	var in struct {
		Question string   `json:"question"`
		Options  []string `json:"options"`
	}
	_ = json.Unmarshal(input, &in)
	var b strings.Builder
	fmt.Fprintf(&b, "The user was asked: %q", strings.TrimSpace(in.Question))
	if len(in.Options) > 0 {
		fmt.Fprintf(&b, " (options: %s)", strings.Join(in.Options, "; "))
	}
	ans := strings.TrimSpace(resultText(res))
	switch {
	case strings.HasPrefix(ans, "The user declined"):
		b.WriteString(". They declined to answer.")
	case strings.HasPrefix(ans, "The user answered outside the options: "):
		fmt.Fprintf(&b, ". They answered (outside the options): %s", strings.TrimPrefix(ans, "The user answered outside the options: "))
	default:
		fmt.Fprintf(&b, ". They answered: %s", strings.TrimPrefix(ans, "The user answered: "))
	}
	return b.String()
}

func projectConfirm(input json.RawMessage, res provider.Block) string {
	ans := strings.TrimSpace(resultText(res))
	if strings.HasPrefix(ans, "Approved") || strings.HasPrefix(ans, "Rejected") {
		return ans
	}
	return fmt.Sprintf("Confirmation was asked for %s. Decision: %s", compactJSON(input), ans)
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Synthetic texts of Repair.
const (
	// NoResultText is the tool_result Repair gives a tool_use that has
	// none (an interrupted turn, a record lost).
	NoResultText = "not run: no result was recorded for this call (the turn was interrupted or cancelled)"
	// OmittedText opens a transcript whose first kept message is the
	// model's (the beginning was cut).
	OmittedText = "(The beginning of this conversation was removed to fit the context.)"
)

// Repair restores the pairing invariant of a transcript after
// interruption, compaction or truncation (case file 7-pairing.md: BH-051,
// BH-053, BH-054):
//
//   - each assistant turn with tool_use blocks is directly followed by one
//     user message holding exactly one tool_result per tool_use, in
//     tool_use order, before any other block; a result found anywhere
//     later in the transcript (a summary was inserted inside the pair) is
//     moved there, the first one per id wins, and only a tool_use with no
//     result anywhere gets a synthetic is_error result ([NoResultText]);
//   - a tool_result whose tool_use is gone (truncated away) becomes plain
//     user text "[Output of an earlier tool call …]" so nothing the user
//     saw is lost and no orphan reaches a provider;
//   - a repeated tool_use id and a tool_use without an id are dropped;
//     empty messages are dropped; neighbours of one role are merged; a
//     transcript that starts with the model's turn gets [OmittedText]
//     first.
//
// The input is not modified.
func Repair(msgs []provider.Message) []provider.Message {
	results := map[string]provider.Block{}
	uses := map[string]bool{}
	for _, m := range msgs {
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.ToolUse:
				if b.ID != "" && m.Role == provider.Assistant {
					uses[b.ID] = true
				}
			case provider.ToolResult:
				if _, dup := results[b.ToolUseID]; !dup && m.Role == provider.User {
					results[b.ToolUseID] = b
				}
			}
		}
	}
	var out []provider.Message
	seenUse := map[string]bool{}
	for _, m := range msgs {
		switch m.Role {
		case provider.Assistant:
			var blocks []provider.Block
			var ids []string
			for _, b := range m.Blocks {
				if b.Type == provider.ToolResult {
					continue
				}
				if b.Type == provider.ToolUse {
					if b.ID == "" || seenUse[b.ID] {
						continue
					}
					seenUse[b.ID] = true
					ids = append(ids, b.ID)
				}
				blocks = append(blocks, b)
			}
			if len(blocks) == 0 {
				continue
			}
			out = appendMessage(out, provider.Message{Role: provider.Assistant, Blocks: blocks})
			if len(ids) == 0 {
				continue
			}
			rb := make([]provider.Block, 0, len(ids))
			for _, id := range ids {
				if r, ok := results[id]; ok {
					rb = append(rb, r)
					continue
				}
				rb = append(rb, provider.Block{Type: provider.ToolResult, ToolUseID: id, IsError: true,
					Content: []provider.Block{{Type: provider.Text, Text: NoResultText}}})
			}
			out = append(out, provider.Message{Role: provider.User, Blocks: rb})
		default:
			var blocks []provider.Block
			for _, b := range m.Blocks {
				switch b.Type {
				case provider.ToolUse:
					continue
				case provider.ToolResult:
					if uses[b.ToolUseID] {
						continue // placed after its tool_use
					}
					if _, ok := results[b.ToolUseID]; !ok {
						continue // a later duplicate of an orphan
					}
					delete(results, b.ToolUseID)
					blocks = append(blocks, provider.Block{Type: provider.Text,
						Text: fmt.Sprintf("[Output of an earlier tool call %s whose request is no longer in context]\n%s", b.ToolUseID, resultText(b))})
				default:
					blocks = append(blocks, b)
				}
			}
			if len(blocks) == 0 {
				continue
			}
			out = appendMessage(out, provider.Message{Role: provider.User, Blocks: blocks})
		}
	}
	if len(out) > 0 && out[0].Role == provider.Assistant {
		out = append([]provider.Message{{Role: provider.User, Blocks: []provider.Block{{Type: provider.Text, Text: OmittedText}}}}, out...)
	}
	return out
}

// appendMessage appends m to msgs, merging it into the last message when
// both have the same role. Blocks are copied.
func appendMessage(msgs []provider.Message, m provider.Message) []provider.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		last := msgs[n-1]
		msgs[n-1] = provider.Message{Role: m.Role, Blocks: slices.Concat(last.Blocks, m.Blocks)}
		return msgs
	}
	return append(msgs, provider.Message{Role: m.Role, Blocks: slices.Clone(m.Blocks)})
}

// ToolNames lists the tool names referenced by tool_use blocks in msgs,
// each once, in order of first appearance: what discovery.Run.Retain
// takes (seed: "A deferred tool referenced by a retained historical
// tool-call is reactivated automatically").
func ToolNames(msgs []provider.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == provider.ToolUse && b.Name != "" && !slices.Contains(out, b.Name) {
				out = append(out, b.Name)
			}
		}
	}
	return out
}

// Shape is a provider's pairing rule set.
type Shape string

// Shapes.
const (
	// Anthropic Messages: starts with a user turn, roles alternate, and
	// every assistant turn with tool_use blocks is followed by a user turn
	// whose leading blocks are exactly one tool_result per tool_use.
	Anthropic Shape = "anthropic"
	// OpenAIChat (chat completions): an assistant message with tool_calls
	// is followed directly by one tool message per call id, before any
	// other message; no tool message without its call.
	OpenAIChat Shape = "openai-chat"
	// OpenAIResponses (Responses API input items): every
	// function_call_output follows its function_call, and every
	// function_call has exactly one output.
	OpenAIResponses Shape = "openai"
)

// ErrPairing is wrapped by every error Validate returns.
var ErrPairing = errors.New("tool_use/tool_result pairing broken")

// Validate checks msgs against shape's pairing rules; the error wraps
// ErrPairing and lists every problem with its message index, e.g.
// "message 3: tool_use tu_2 has no tool_result in the next message".
func Validate(msgs []provider.Message, shape Shape) error {
	var probs []string
	bad := func(i int, format string, args ...any) {
		probs = append(probs, fmt.Sprintf("message %d: ", i)+fmt.Sprintf(format, args...))
	}
	useAt := map[string]int{}
	resultCount := map[string]int{}
	for i, m := range msgs {
		if len(m.Blocks) == 0 {
			bad(i, "no blocks")
		}
		if m.Role != provider.User && m.Role != provider.Assistant {
			bad(i, "unknown role %q", m.Role)
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.ToolUse:
				if m.Role != provider.Assistant {
					bad(i, "tool_use %s in a %s message", b.ID, m.Role)
				}
				if b.ID == "" {
					bad(i, "tool_use without an id")
				} else if _, dup := useAt[b.ID]; dup {
					bad(i, "tool_use id %s repeated", b.ID)
				} else {
					useAt[b.ID] = i
				}
			case provider.ToolResult:
				if m.Role != provider.User {
					bad(i, "tool_result %s in a %s message", b.ToolUseID, m.Role)
				}
				resultCount[b.ToolUseID]++
				at, ok := useAt[b.ToolUseID]
				switch {
				case !ok:
					bad(i, "tool_result %s has no earlier tool_use", b.ToolUseID)
				case shape != OpenAIResponses && at != i-1:
					bad(i, "tool_result %s is not in the message right after its tool_use (message %d)", b.ToolUseID, at)
				}
			}
		}
	}
	for id, at := range useAt {
		if n := resultCount[id]; n != 1 {
			bad(at, "tool_use %s has %d tool_results, want exactly 1", id, n)
		}
	}
	if shape != OpenAIResponses {
		for i, m := range msgs {
			if m.Role != provider.Assistant || !hasUse(m) {
				continue
			}
			if i+1 >= len(msgs) || msgs[i+1].Role != provider.User {
				bad(i, "tool_use turn is not followed by a user message with its results")
				continue
			}
			want := 0
			for _, b := range m.Blocks {
				if b.Type == provider.ToolUse {
					want++
				}
			}
			lead := 0
			for _, b := range msgs[i+1].Blocks {
				if b.Type != provider.ToolResult {
					break
				}
				lead++
			}
			total := 0
			for _, b := range msgs[i+1].Blocks {
				if b.Type == provider.ToolResult {
					total++
				}
			}
			if lead != total {
				bad(i+1, "tool_result blocks must come before any other block")
			}
		}
	}
	if shape == Anthropic {
		if len(msgs) > 0 && msgs[0].Role != provider.User {
			bad(0, "the first message must be the user's")
		}
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Role == msgs[i-1].Role {
				bad(i, "two %s messages in a row", msgs[i].Role)
			}
		}
	}
	if len(probs) == 0 {
		return nil
	}
	slices.Sort(probs)
	return fmt.Errorf("%w (%s): %s", ErrPairing, shape, strings.Join(probs, "; "))
}

func hasUse(m provider.Message) bool {
	for _, b := range m.Blocks {
		if b.Type == provider.ToolUse {
			return true
		}
	}
	return false
}
