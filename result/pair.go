package result

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Use is one tool_use (function_call) block of an assistant turn.
type Use struct {
	ID    string
	Name  string
	Input []byte
}

// Pair returns exactly one model projection per use, in the order of uses,
// so the message after an assistant turn holds a tool_result for every
// tool_use even when the turn was interrupted (case BH-051):
//
//   - a finished record gives its model form: compacted, or else bounded
//     by [Bound] to [DefaultMaxModelChars], as the [Recorder] handed it;
//   - a cancelled record gives an error whose text starts with
//     "cancelled after D (stopped by the user or the parent run)" followed
//     by the partial output the tool returned;
//   - a record still "running" (the call was abandoned) or "interrupted"
//     (its process ended while it ran) gives an error "interrupted: no
//     result was recorded";
//   - a use with no record gives an error "not run: cancelled".
//
// Call it only for a turn whose calls have all returned or been given up:
// an in-flight call's result belongs directly after its tool_use, and no
// synthetic result may stand in for it (BH-053). Errors are store failures
// other than store.ErrNotFound.
func Pair(ctx context.Context, st store.Store, uses []Use) ([]Model, error) {
	out := make([]Model, 0, len(uses))
	for _, u := range uses {
		rec, err := st.Get(ctx, u.ID)
		if errors.Is(err, store.ErrNotFound) {
			out = append(out, synthetic(u, "not run: cancelled before this call started; nothing was executed"))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("result: pair %s: %w", u.ID, err)
		}
		switch rec.Outcome {
		case store.OutcomeRunning, store.OutcomeInterrupted:
			out = append(out, synthetic(u, "interrupted: no result was recorded (the call was stopped or the process ended while it ran); its effect may be partial, inspect before retrying"))
			continue
		}
		m, err := ModelOf(rec)
		if err != nil {
			return nil, err
		}
		if rec.Compaction == store.CompactionNone {
			m = boundModel(m, rec)
		}
		if rec.Outcome == store.OutcomeCancelled {
			head := "cancelled after " + seconds(rec.EndedAt.Sub(rec.StartedAt)) + " (stopped by the user or the parent run); partial output:\n"
			m.Text = head + m.Text
			m.IsError = true
			m.Content = append([]tool.Content{{Type: tool.TextContent, Text: head}}, m.Content...)
		}
		out = append(out, m)
	}
	return out, nil
}

func synthetic(u Use, text string) Model {
	return Model{ToolCallID: u.ID, Tool: u.Name, Input: u.Input, Text: text, IsError: true,
		Content: []tool.Content{{Type: tool.TextContent, Text: text}}}
}

// seconds formats d as "3.1 s" (one decimal).
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// boundModel bounds an uncompacted model form as the Recorder bounded the
// result it returned; a tool's own cap (evidence shown_chars) is read from
// the record's output, since the model form has no evidence.
func boundModel(m Model, rec *store.Record) Model {
	r := &tool.Result{Content: m.Content, IsError: m.IsError}
	if o, err := Decode(rec.Output); err == nil {
		r.Evidence = o.Evidence
	}
	b := Bound(r, rec.ToolCallID, DefaultMaxModelChars, true)
	if b == r {
		return m
	}
	m.Content, m.Text = b.Content, b.AllText()
	return m
}
