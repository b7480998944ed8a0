package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Token estimates of [EstimateTokens] for what is not text.
const (
	// ImageTokens is the estimate for one image: Anthropic's ceiling for
	// an image it does not downscale ((1092×1092)/750 ≈ 1,600 tokens);
	// OpenAI's high-detail tiles come to a similar figure.
	ImageTokens = 1600
	// MessageOverheadTokens and BlockOverheadTokens approximate the role
	// and structure tokens the APIs add per message and per block.
	MessageOverheadTokens = 4
	BlockOverheadTokens   = 3
)

// FitOptions configure [Fit]. Budget is required; every other zero field
// takes the default given.
type FitOptions struct {
	// Budget is how many tokens the messages may take, as counted by
	// [EstimateTokens] with Count. Messages within it are returned as
	// they are. <= 0 means no limit.
	Budget int
	// Target is what the messages are cut down to once they exceed
	// Budget, in tokens; default Budget. A Target below Budget leaves room
	// for the next steps, so the same cut (and the provider's prompt
	// cache of the kept prefix) serves several requests.
	Target int
	// MinDrop drops at least this many of the oldest exchanges whenever
	// anything is dropped, and exactly this many when the rest then fits
	// Budget: give it the previous request's Report.Exchanges to keep the
	// cut where it was.
	MinDrop int
	// Count counts the tokens of a text; default: bytes / 4, rounded up
	// (pass compact.Count for o200k_base).
	Count func(string) int
	// Note writes the user-role text put where exchanges were dropped,
	// from the number of assistant steps dropped and the tool calls they
	// held (oldest first); default DroppedNote with default NoteOptions.
	// Fit may call it once per cut it considers, so it should cost in
	// proportion to what it writes, not to len(calls).
	Note func(steps int, calls []DroppedCall) string
}

// DroppedCall is one tool call that [Fit] dropped from the context.
type DroppedCall struct {
	ID    string          // the toolCallId: what view_tool_call recovers it by
	Tool  string          // tool name as called
	Input json.RawMessage // its arguments
}

// Defaults of [NoteOptions].
const (
	DefaultNoteCalls      = 25 // calls a note names one by one
	DefaultNoteInputChars = 80 // characters of a named call's arguments
)

// NoteOptions configure [DroppedNote]. Zero fields take their defaults.
type NoteOptions struct {
	// MaxCalls is how many dropped calls the note names one by one (the
	// newest of them; the older ones are counted). Count; default 25.
	MaxCalls int
	// MaxInputChars bounds each named call's arguments (compact JSON), in
	// characters; longer ones end with "…". Default 80.
	MaxInputChars int
	// ListCommand tells how to list every call, for a note that cannot
	// name them all (e.g. "aibuddy calls list --task task-1"); "" leaves
	// it out.
	ListCommand string
	// Unrecoverable says the calls cannot be recovered (no view_tool_call
	// in the run): the note says so instead of naming the way back.
	Unrecoverable bool
}

// FitReport says what [Fit] did.
type FitReport struct {
	Exchanges int           // exchanges dropped (0: msgs returned as they were)
	Steps     int           // assistant messages among them
	CallIDs   []string      // tool calls dropped with them, oldest first
	Calls     []DroppedCall // the same calls with their tools and arguments
	Tokens    int           // estimate of the returned messages
	// Over is true when the returned messages still exceed Budget: the
	// first user message and the newest exchange are never dropped.
	Over bool
}

// DroppedNote is the default note of [Fit]: how many steps were removed
// and, for each dropped call, its tool, its arguments (cut to
// o.MaxInputChars) and its toolCallId, so that any of them can be got
// back with view_tool_call. At most o.MaxCalls calls are named: the
// newest of those dropped (nearest to the context that stays); the older
// ones are counted, and o.ListCommand, when set, says how to list them. The note's length is bounded by o, whatever the
// number of calls. o may be nil.
func DroppedNote(steps int, calls []DroppedCall, o *NoteOptions) string {
	var opt NoteOptions
	if o != nil {
		opt = *o
	}
	if opt.MaxCalls <= 0 {
		opt.MaxCalls = DefaultNoteCalls
	}
	if opt.MaxInputChars <= 0 {
		opt.MaxInputChars = DefaultNoteInputChars
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[Context note: %d earlier step(s) of this run were removed to fit the model's context window.", steps)
	if opt.Unrecoverable {
		b.WriteString(" Their tool calls and results are no longer available.")
	}
	if n := len(calls); n > 0 {
		shown := calls[max(n-opt.MaxCalls, 0):]
		if len(shown) == n {
			fmt.Fprintf(&b, " They held %s:", plural(n, "tool call", "tool calls"))
		} else {
			fmt.Fprintf(&b, " They held %s; the newest %d:", plural(n, "tool call", "tool calls"), len(shown))
		}
		for _, c := range shown {
			fmt.Fprintf(&b, "\n- %s %s id=%s", c.Tool, shortArgs(c.Input, opt.MaxInputChars), c.ID)
		}
		if older := n - len(shown); older > 0 {
			fmt.Fprintf(&b, "\n- and %s before them", plural(older, "older call", "older calls"))
			if opt.ListCommand != "" {
				fmt.Fprintf(&b, " (`%s` lists every call of this run with its id)", opt.ListCommand)
			}
			b.WriteString(".")
		}
		if !opt.Unrecoverable {
			b.WriteString("\n")
		}
	}
	if !opt.Unrecoverable {
		b.WriteString(`Every call keeps its record: view_tool_call {"id": "<id>"} recovers any call and its full result by id.`)
	}
	b.WriteString("]")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// shortArgs is a call's arguments as compact JSON of at most n characters
// (runes), "…" ending a cut.
func shortArgs(in json.RawMessage, n int) string {
	var buf bytes.Buffer
	s := string(in)
	if json.Compact(&buf, in) == nil {
		s = buf.String()
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if s == "" {
		s = "{}"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:max(n-1, 0)]) + "…"
	}
	return s
}

// EstimateTokens estimates the tokens of msgs: Count over every text,
// tool name, tool input, result content and opaque block, [ImageTokens]
// per image, plus [MessageOverheadTokens] per message and
// [BlockOverheadTokens] per block. count nil means bytes / 4.
func EstimateTokens(msgs []Message, count func(string) int) int {
	if count == nil {
		count = quarterBytes
	}
	n := 0
	for _, m := range msgs {
		n += messageTokens(m, count)
	}
	return n
}

func quarterBytes(s string) int { return (len(s) + 3) / 4 }

func messageTokens(m Message, count func(string) int) int {
	n := MessageOverheadTokens
	for _, b := range m.Blocks {
		n += blockTokens(b, count)
	}
	return n
}

func blockTokens(b Block, count func(string) int) int {
	n := BlockOverheadTokens
	switch b.Type {
	case Text:
		n += count(b.Text)
	case ToolUse:
		n += count(b.Name) + count(string(b.Input)) + count(b.ID)
	case ToolResult:
		n += count(b.ToolUseID)
		for _, c := range b.Content {
			n += blockTokens(c, count)
		}
	case Image:
		n += ImageTokens
	default:
		n += count(b.Text) + count(string(b.Raw))
	}
	return n
}

// Fit returns msgs cut to fit opts.Budget by dropping the oldest whole
// exchanges (cases BH-053 and BH-054 of 7-pairing.md: "Truncating for
// overflow removes whole pairs only"; "Summaries are placed only at pair
// boundaries").
//
// The first message, when it is the user's (the task), is always kept.
// The rest is split only where no tool_use/tool_result pair spans the
// split, so an exchange is an assistant turn with all its tool calls
// together with every result of those calls (and whatever user text
// follows before the next turn): a call is never kept without its result
// nor a result without its call, whichever provider shape (Anthropic,
// OpenAI chat or Responses) the input follows. The newest exchange is
// always kept. When anything is dropped, one user-role note (opts.Note)
// takes the dropped exchanges' place; it is merged into a neighbouring
// user message, so roles still alternate.
//
// Token counting walks from the newest message back and stops once the
// budget is known to be exceeded, so the cost is bounded by Budget, not by
// the transcript's length. msgs is not modified; the input's own pairing
// problems, if any, are kept as they are (see Pair).
func Fit(msgs []Message, opts FitOptions) ([]Message, FitReport) {
	count := opts.Count
	if count == nil {
		count = quarterBytes
	}
	if opts.Note == nil {
		opts.Note = func(steps int, calls []DroppedCall) string { return DroppedNote(steps, calls, nil) }
	}
	budget := opts.Budget
	if budget <= 0 {
		return msgs, FitReport{Tokens: EstimateTokens(msgs, count)}
	}
	target := opts.Target
	if target <= 0 || target > budget {
		target = budget
	}

	head := 0
	if len(msgs) > 0 && msgs[0].Role == User {
		head = 1
	}
	units := exchanges(msgs, head)
	headTokens := EstimateTokens(msgs[:head], count)

	// Tokens of each exchange from the newest back, until the total is
	// known to exceed the budget.
	tokens := make([]int, len(units))
	total := headTokens
	counted := len(units) // units[counted:] are counted
	for counted > 0 && total <= budget {
		counted--
		u := units[counted]
		tokens[counted] = EstimateTokens(msgs[u[0]:u[1]], count)
		total += tokens[counted]
	}
	if total <= budget || len(units) <= 1 {
		return msgs, FitReport{Tokens: total, Over: total > budget}
	}

	// suffix(k) is the tokens of units[k:], for k >= counted.
	suffix := func(k int) int {
		s := 0
		for _, t := range tokens[k:] {
			s += t
		}
		return s
	}
	drop := newDropped(msgs, units)
	noteCost := func(k int) int {
		steps, calls := drop.of(k)
		return MessageOverheadTokens + BlockOverheadTokens + count(opts.Note(steps, calls))
	}
	minDrop := max(opts.MinDrop, 1)
	cut := -1
	if minDrop < len(units) && minDrop >= counted && headTokens+noteCost(minDrop)+suffix(minDrop) <= budget {
		cut = minDrop // the previous cut still fits
	} else {
		for k := max(minDrop, counted); k < len(units); k++ {
			if headTokens+noteCost(k)+suffix(k) <= target {
				cut = k
				break
			}
		}
		if cut < 0 {
			cut = len(units) - 1 // the newest exchange alone is over
		}
	}
	cut = min(cut, len(units)-1)

	steps, calls := drop.of(cut)
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	note := Block{Type: Text, Text: opts.Note(steps, calls)}
	out := make([]Message, 0, len(msgs)-units[cut][0]+head+1)
	out = append(out, msgs[:head]...)
	out = appendMerged(out, Message{Role: User, Blocks: []Block{note}})
	rest := msgs[units[cut][0]:]
	if len(rest) > 0 && rest[0].Role == User {
		// Merged after the note: its leading blocks cannot be results
		// (no pair spans a cut).
		out = appendMerged(out, rest[0])
		rest = rest[1:]
	}
	out = append(out, rest...)
	rep := FitReport{Exchanges: cut, Steps: steps, CallIDs: ids, Calls: slices.Clone(calls), Tokens: EstimateTokens(out, count)}
	rep.Over = rep.Tokens > budget
	return out, rep
}

// exchanges splits msgs[head:] into spans [start, end) of message indices
// at every boundary no tool_use/tool_result pair crosses, oldest first.
func exchanges(msgs []Message, head int) [][2]int {
	n := len(msgs)
	if head >= n {
		return nil
	}
	// blocked[k]: a pair has one end before k and the other at or after k.
	diff := make([]int, n+1)
	callAt := map[string]int{}
	for i, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == ToolUse && b.ID != "" {
				if _, dup := callAt[b.ID]; !dup {
					callAt[b.ID] = i
				}
			}
		}
	}
	for j, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type != ToolResult {
				continue
			}
			i, ok := callAt[b.ToolUseID]
			if !ok || i == j {
				continue
			}
			lo, hi := min(i, j), max(i, j)
			diff[lo+1]++
			diff[hi+1]--
		}
	}
	var units [][2]int
	start, open := head, 0
	for k := 0; k <= n; k++ {
		open += diff[k]
		if k <= head || k == n {
			continue
		}
		if open == 0 {
			units = append(units, [2]int{start, k})
			start = k
		}
	}
	return append(units, [2]int{start, n})
}

// dropped holds, per exchange boundary, the assistant messages and tool
// calls before it, so the note of any cut is had without rescanning.
type dropped struct {
	steps []int // steps[k]: assistant messages in units[:k]
	ends  []int // ends[k]: len of calls held by units[:k]
	calls []DroppedCall
}

func newDropped(msgs []Message, units [][2]int) *dropped {
	d := &dropped{steps: make([]int, len(units)+1), ends: make([]int, len(units)+1)}
	for u, span := range units {
		n := d.steps[u]
		for _, m := range msgs[span[0]:span[1]] {
			if m.Role == Assistant {
				n++
			}
			for _, b := range m.Blocks {
				if b.Type == ToolUse {
					d.calls = append(d.calls, DroppedCall{ID: b.ID, Tool: b.Name, Input: b.Input})
				}
			}
		}
		d.steps[u+1], d.ends[u+1] = n, len(d.calls)
	}
	return d
}

// of is the steps and calls of units[:k].
func (d *dropped) of(k int) (int, []DroppedCall) {
	if k <= 0 {
		return 0, nil
	}
	return d.steps[k], d.calls[:d.ends[k]:d.ends[k]]
}

// appendMerged appends m, merging it into the last message when both have
// the same role. Blocks are copied.
func appendMerged(msgs []Message, m Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		msgs[n-1] = Message{Role: m.Role, Blocks: slices.Concat(msgs[n-1].Blocks, m.Blocks)}
		return msgs
	}
	return append(msgs, Message{Role: m.Role, Blocks: slices.Clone(m.Blocks)})
}
