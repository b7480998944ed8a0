package provider

import (
	"fmt"
)

// missingResult is the synthetic result given to a call whose result is
// not in the transcript (an interrupted run, a result lost to truncation).
const missingResult = "no result recorded for this call (interrupted or dropped from context); run it again if it is still needed"

// Pair returns msgs with the pairing the OpenAI APIs (Responses and chat
// completions) enforce, and that keeps any transcript valid (cases
// BH-051, BH-054): every tool_use is followed, in the next message, by
// exactly one tool_result for it, and every tool_result answers a tool_use
// that precedes it.
//
//   - A call with no later result gets a synthetic IsError result
//     (missingResult).
//   - A result whose call is not in msgs (an orphan, e.g. its call was
//     truncated away) becomes user text naming the call id, so its content
//     is not lost and no function_call_output without its function_call is
//     sent.
//   - A second result for the same call, and a second tool_use with an id
//     already used, are dropped.
//
// Results are moved to a user message placed directly after the assistant
// message holding their calls, in call order; the other blocks keep their
// messages and order. msgs is not modified.
func Pair(msgs []Message) []Message {
	callAt := map[string]int{} // tool_use id → index of its message
	for i, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == ToolUse {
				if _, dup := callAt[b.ID]; !dup {
					callAt[b.ID] = i
				}
			}
		}
	}
	result := map[string]Block{} // the first result after its call
	for i, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type != ToolResult {
				continue
			}
			if at, ok := callAt[b.ToolUseID]; ok && at < i {
				if _, seen := result[b.ToolUseID]; !seen {
					result[b.ToolUseID] = b
				}
			}
		}
	}
	out := make([]Message, 0, len(msgs)+1)
	usedCall := map[string]bool{}
	for i, m := range msgs {
		var keep, results []Block
		for _, b := range m.Blocks {
			switch b.Type {
			case ToolUse:
				if usedCall[b.ID] || callAt[b.ID] != i {
					continue // duplicate id
				}
				usedCall[b.ID] = true
				keep = append(keep, b)
				if r, ok := result[b.ID]; ok {
					results = append(results, r)
				} else {
					results = append(results, Block{Type: ToolResult, ToolUseID: b.ID, IsError: true,
						Content: []Block{{Type: Text, Text: missingResult}}})
				}
			case ToolResult:
				if _, ok := result[b.ToolUseID]; ok {
					continue // moved next to its call
				}
				if _, ok := callAt[b.ToolUseID]; ok {
					continue // a duplicate result, or a result before its call
				}
				keep = append(keep, orphanText(b))
			default:
				keep = append(keep, b)
			}
		}
		if len(keep) > 0 {
			out = append(out, Message{Role: m.Role, Blocks: keep})
		}
		if len(results) > 0 {
			out = append(out, Message{Role: User, Blocks: results})
		}
	}
	return out
}

// orphanText turns a tool_result whose call is gone into user text.
func orphanText(b Block) Block {
	text := fmt.Sprintf("[result of tool call %s, whose call is no longer in context]", b.ToolUseID)
	if b.IsError {
		text += " (error)"
	}
	for _, c := range b.Content {
		switch c.Type {
		case Text:
			text += "\n" + c.Text
		case Image:
			text += fmt.Sprintf("\n[image %s, %d bytes, omitted]", c.MIMEType, len(c.Data))
		}
	}
	return Block{Type: Text, Text: text}
}

// WireIDs returns msgs as a provider must receive them: every tool_use
// under the id that provider gave it (Block.ProviderID) instead of
// aibuddy's own (Block.ID), and every tool_result under the id of the call
// it answers. Adapters call it last, on what they are about to send. A
// provider id that an earlier call in msgs already goes out under keeps
// aibuddy's id instead, so that the ids of one request stay unique (a
// server that sends "call_0" on every turn gets its later calls back
// under aibuddy's ids; Anthropic's API refuses repeated tool_use ids, and
// servers that look a call up by id would find the wrong one). A tool_use
// without ProviderID, and a result whose call is not in msgs, keep their
// ids. msgs is not modified; without any ProviderID it is returned as is.
func WireIDs(msgs []Message) []Message {
	has := false
	taken := map[string]bool{} // ids that go out as they are
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type != ToolUse {
				continue
			}
			if b.ProviderID != "" {
				has = true
			} else {
				taken[b.ID] = true
			}
		}
	}
	if !has {
		return msgs
	}
	wire := map[string]string{} // aibuddy's id -> the id it goes out under
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type != ToolUse || b.ProviderID == "" {
				continue
			}
			if _, done := wire[b.ID]; done {
				continue
			}
			w := b.ProviderID
			if taken[w] {
				w = b.ID
			}
			taken[w] = true
			wire[b.ID] = w
		}
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		changed := false
		for _, b := range m.Blocks {
			if (b.Type == ToolUse && b.ProviderID != "") || (b.Type == ToolResult && wire[b.ToolUseID] != "") {
				changed = true
				break
			}
		}
		if !changed {
			continue
		}
		blocks := make([]Block, len(m.Blocks))
		for j, b := range m.Blocks {
			switch {
			case b.Type == ToolUse && b.ProviderID != "":
				b.ID, b.ProviderID = wire[b.ID], ""
			case b.Type == ToolResult:
				if w, ok := wire[b.ToolUseID]; ok {
					b.ToolUseID = w
				}
			}
			blocks[j] = b
		}
		out[i].Blocks = blocks
	}
	return out
}
