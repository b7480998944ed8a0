package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Strategy is how a tool's oversized results are compacted (seed: "A tool
// can choose structural trimming, model summarization, or drop").
type Strategy string

// Strategies.
const (
	// Trim shortens structurally (JSON) or by head and tail (text); the
	// default.
	Trim Strategy = "trim"
	// Summarize asks the Summarizer for a summary; without one, or when it
	// fails, the result is trimmed instead and the stub says so.
	Summarize Strategy = "summarize"
	// Drop replaces the model form with a stub and no recovery pointer.
	// Choosing it for a tool is that tool's declaration that its output is
	// disposable; it cannot be the default.
	Drop Strategy = "drop"
	// Keep never compacts (view_tool_call's own results are kept so).
	Keep Strategy = "keep"
)

// Defaults of Options.
const (
	DefaultThreshold = 2500 // tokens (seed: "the current 2,500-token precompaction threshold")
	DefaultTarget    = 1000 // tokens of a compact form, stub included
	DefaultWorkers   = 2
)

// Options configure a [Compactor]. Zero fields take their defaults.
type Options struct {
	// DataDir is the data folder; offload files go under
	// DataDir/compacted_outputs. Required.
	DataDir string
	// Threshold is the size in tokens (as counted by Counter) from which a
	// result is compacted. Default 2,500.
	Threshold int
	// Target is the size in tokens a trimmed or summarized form aims at,
	// stub included. Default 1,000; at most Threshold-1.
	Target int
	// Counter counts tokens. Default [Count] (o200k_base).
	Counter Counter
	// Summarizer serves the Summarize strategy (SetSummarizer replaces
	// it). Default none: Summarize falls back to Trim, and the stub says
	// why.
	Summarizer Summarizer
	// SummaryTimeout bounds one summary request; past it the result is
	// trimmed instead. Default 60 s (settings compaction.summaryTimeout).
	SummaryTimeout time.Duration
	// SummaryMaxTokens bounds one summary, in the model's output tokens.
	// Default 800 (compaction.summaryMaxTokens).
	SummaryMaxTokens int
	// SummaryInputMaxChars bounds the result text sent to be summarized,
	// in characters: a longer one is sent as its first and last halves
	// with the omitted middle marked. Default 60,000
	// (compaction.summaryInputMaxChars).
	SummaryInputMaxChars int
	// Strategies choose a strategy by tool name; they win over
	// GroupStrategies.
	Strategies map[string]Strategy
	// GroupStrategies choose a strategy by group key, through GroupOf
	// (registry.Registry.GroupOf fits).
	GroupStrategies map[string]Strategy
	GroupOf         func(toolName string) (groupKey string, ok bool)
	// Default is the strategy of every other tool. Default Trim; Drop is
	// refused (drop must be declared per tool or group).
	Default Strategy
	// Workers bounds concurrent background compactions. Default 2.
	Workers int
	// FullOutputDir is where execute keeps full command output, as
	// ViewOptions.FullOutputDir (give both the same folder). A result
	// whose evidence names a full output file inside it
	// (tool.EvidenceFullOutputPath) is then compacted
	// with recovery hints that address the result text ("part":"result"),
	// because view_tool_call reads the file by default; its stub gives the
	// command's true totals. Default "".
	FullOutputDir string
	// Logger receives background failures. Default: discard.
	Logger *slog.Logger
}

// Compactor compacts records in the background and on demand. It is safe
// for concurrent use. Close it at shutdown.
type Compactor struct {
	st     store.Store
	o      Options
	sem    chan struct{}
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	last   sync.Map // toolCallID → Outcome of the latest background run

	summarizer atomic.Pointer[summarizerBox] // the Summarize strategy's (SetSummarizer)

	defaultCounter bool // o.Counter is Count, so maxCount bounds it
	// skipBelow: a record whose model form has fewer bytes than this is
	// under the threshold without counting (0: always count).
	skipBelow int
}

// ErrBadOptions is wrapped by New's errors.
var ErrBadOptions = errors.New("compact: bad options")

// New returns a compactor over st. Errors wrap ErrBadOptions: no DataDir,
// or Default set to Drop.
func New(st store.Store, opts *Options) (*Compactor, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.DataDir == "" {
		return nil, fmt.Errorf("%w: DataDir is required", ErrBadOptions)
	}
	if o.Default == Drop {
		return nil, fmt.Errorf("%w: Drop cannot be the default strategy; declare it per disposable tool", ErrBadOptions)
	}
	if o.Default == "" {
		o.Default = Trim
	}
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Target <= 0 {
		o.Target = DefaultTarget
	}
	if o.Target >= o.Threshold {
		o.Target = max(o.Threshold-1, 1)
	}
	c := &Compactor{}
	defaultCounter := o.Counter == nil
	if defaultCounter {
		o.Counter = Count
		// An o200k_base token is at least one byte of text, and the text
		// of a model form is at most its JSON's bytes: a form of fewer
		// bytes than Threshold cannot reach Threshold tokens.
		c.skipBelow = o.Threshold
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.SummaryTimeout <= 0 {
		o.SummaryTimeout = DefaultSummaryTimeout
	}
	if o.SummaryMaxTokens <= 0 {
		o.SummaryMaxTokens = DefaultSummaryMaxTokens
	}
	if o.SummaryInputMaxChars <= 0 {
		o.SummaryInputMaxChars = DefaultSummaryInputMaxChars
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.st, c.o, c.sem, c.defaultCounter = st, o, make(chan struct{}, o.Workers), defaultCounter
	c.base, c.cancel = context.WithCancel(context.Background())
	if o.Summarizer != nil {
		c.SetSummarizer(o.Summarizer)
	}
	return c, nil
}

// StrategyOf is the strategy for a tool name: view_tool_call is always
// Keep; then Options.Strategies, then the group's, then Options.Default.
func (c *Compactor) StrategyOf(toolName string) Strategy {
	if toolName == ViewToolCallName {
		return Keep
	}
	if s, ok := c.o.Strategies[toolName]; ok {
		return s
	}
	if c.o.GroupOf != nil {
		if g, ok := c.o.GroupOf(toolName); ok {
			if s, ok := c.o.GroupStrategies[g]; ok {
				return s
			}
		}
	}
	return c.o.Default
}

// Outcome reports one compaction.
type Outcome struct {
	ToolCallID string
	Strategy   Strategy
	// Replaced is true when the store now holds the compact form.
	Replaced bool
	// Reason says why nothing was replaced ("under threshold", "not
	// smaller", "keep", "already compacted", "running", "interrupted").
	Reason       string
	BeforeTokens int // tokens of the model text before; -1 when under the threshold by its length alone (not counted)
	AfterTokens  int // tokens of the compact text
	BeforeBytes  int // bytes of the model form (JSON) before
	AfterBytes   int // bytes of the compact model form
	Pointer      string
	// SummarizedBy is, for a summary, who wrote it: "<model> via
	// <provider>" or "<model> via host sampling".
	SummarizedBy string
	// Fallback is, for a Summarize strategy that trimmed instead, why
	// (no summarizer, the host offers no sampling, a failure, a timeout,
	// a summary not smaller than the result).
	Fallback string
}

// Schedule compacts rec in the background when it needs it and returns at
// once (result.Compactor). The work stops when ctx is cancelled (a user or
// parent-run stop) or the compactor is closed; a stopped compaction leaves
// the record as it was. After Close it does nothing.
//
// A record that cannot need compaction is settled at once, with no
// background work, no store read and no token count: one still running or
// already compacted, one whose tool's strategy is Keep, and, with the
// default Counter, one whose model form (JSON) has fewer bytes than
// Threshold (an o200k_base token is at least one byte), which is reported
// "under threshold" by Last.
func (c *Compactor) Schedule(ctx context.Context, rec *store.Record) {
	if rec.Outcome == store.OutcomeRunning || rec.Outcome == store.OutcomeInterrupted || rec.Compaction != store.CompactionNone {
		return
	}
	if len(rec.Model) < c.skipBelow {
		c.last.Store(rec.ToolCallID, Outcome{ToolCallID: rec.ToolCallID, Strategy: c.StrategyOf(rec.Tool),
			Reason: "under threshold", BeforeTokens: -1, BeforeBytes: len(rec.Model)})
		return
	}
	if c.StrategyOf(rec.Tool) == Keep {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	cp := *rec
	go func() {
		defer c.wg.Done()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(c.base, cancel)
		defer stop()
		select {
		case c.sem <- struct{}{}:
		case <-wctx.Done():
			return
		}
		defer func() { <-c.sem }()
		out, err := c.Compact(wctx, &cp)
		if err != nil && wctx.Err() != nil {
			// Stopped with the run (a user's Ctrl-C) or by Close: the
			// record stays as it was; not a failure.
			c.o.Logger.Debug("compact: background compaction stopped", "toolCallId", cp.ToolCallID, "err", err)
			return
		}
		if err != nil {
			c.o.Logger.Warn("compact: background compaction failed", "toolCallId", cp.ToolCallID, "err", err)
			return
		}
		c.last.Store(cp.ToolCallID, out)
	}()
}

// Last returns the outcome of the latest background compaction of a call.
func (c *Compactor) Last(toolCallID string) (Outcome, bool) {
	v, ok := c.last.Load(toolCallID)
	if !ok {
		return Outcome{}, false
	}
	return v.(Outcome), true
}

// Wait blocks until every scheduled compaction has ended.
func (c *Compactor) Wait() { c.wg.Wait() }

// Close cancels the background work, waits for it, and refuses new work.
func (c *Compactor) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// Compact compacts one record now (Schedule runs it in the background):
// it reads the current record from the store, and when its model text
// reaches the threshold and its strategy is not Keep, builds the compact
// form; for Trim and Summarize it writes the offload file first, then
// calls store.ReplaceModel, which keeps the original when the new form is
// not smaller in bytes. Errors come from the store, the offload write, or
// ctx (wrapped); in every case the record is left either as it was or
// compacted whole.
func (c *Compactor) Compact(ctx context.Context, rec *store.Record) (Outcome, error) {
	out := Outcome{ToolCallID: rec.ToolCallID}
	cur, err := c.st.Get(ctx, rec.ToolCallID)
	if err != nil {
		return out, fmt.Errorf("compact: %s: %w", rec.ToolCallID, err)
	}
	out.Strategy = c.StrategyOf(cur.Tool)
	switch {
	case cur.Outcome == store.OutcomeRunning || cur.Outcome == store.OutcomeInterrupted:
		out.Reason = string(cur.Outcome)
		return out, nil
	case cur.Compaction != store.CompactionNone:
		out.Reason = "already compacted"
		return out, nil
	case out.Strategy == Keep:
		out.Reason = "keep"
		return out, nil
	}
	model, err := result.Decode(cur.Model)
	if err != nil {
		return out, err
	}
	text, images := splitContent(model)
	out.BeforeBytes = len(cur.Model)
	if c.defaultCounter && maxCount(text) < c.o.Threshold {
		// Under the threshold by its length alone: no vocabulary is
		// built for it (a CLI call's start-up would pay 0.1 s for it).
		out.BeforeTokens = -1
		out.Reason = "under threshold"
		return out, nil
	}
	out.BeforeTokens = c.o.Counter(text)
	if out.BeforeTokens < c.o.Threshold {
		out.Reason = "under threshold"
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("compact: %s: %w", rec.ToolCallID, err)
	}
	var (
		compactText string
		kind        store.Compaction
		pointer     string
	)
	stats := fmt.Sprintf("%s (%s estimate), %s in %s",
		plural(out.BeforeTokens, "token", "tokens"), Encoding,
		plural(utf8.RuneCountInString(text), "character", "characters"), plural(lineCount(text), "line", "lines"))
	hint := fmt.Sprintf(`view_tool_call {"id":%s}`, jsonString(cur.ToolCallID))
	recover := hint + " returns them in slices (offset/limit, lines, pattern, json_path)"
	if full, ok := c.fullOutput(cur); ok {
		// view_tool_call's default part is then the full output file, whose
		// lines are not those of the text trimmed here: the markers name
		// the result text (BH-047).
		hint = fmt.Sprintf(`view_tool_call {"id":%s,"part":"result"}`, jsonString(cur.ToolCallID))
		stats += " of result text; " + full.describe()
		recover = hint + " returns this result text in slices (offset/limit, lines, pattern, json_path)"
		if full.viewable {
			recover += fmt.Sprintf(`; view_tool_call {"id":%s} reads the command's full output from its file (its lines are numbered as in execute's own header and marker)`, jsonString(cur.ToolCallID))
		}
	}
	if out.Strategy == Drop {
		kind = store.CompactionDrop
		compactText = fmt.Sprintf("[result of %s %s dropped by aibuddy precompaction: the tool declares its output disposable; it had %s; no recovery pointer is kept, run the tool again if you need it]",
			cur.Tool, compactInput(cur.Input), stats)
	} else {
		pointer = OffloadPath(cur.TaskID, cur.ToolCallID)
		stub := func(how, body string) string {
			return fmt.Sprintf("[result of %s %s %s; original: %s; toolCallId=%s; the raw input and output are kept: %s]\n%s",
				cur.Tool, compactInput(cur.Input), how, stats, cur.ToolCallID, recover, body)
		}
		body, how := "", ""
		if out.Strategy == Summarize {
			sum, by, why, serr := c.summarize(ctx, cur.TaskID, cur.ToolCallID, cur.Tool, compactInput(cur.Input), text)
			if serr != nil {
				return out, fmt.Errorf("compact: %s: summarize: %w", rec.ToolCallID, serr)
			}
			if by != "" {
				// The summary enters only when its form is smaller than
				// the result (seed: "only when it is smaller than the
				// original"); else the result is trimmed.
				sumHow := "summarized by " + by + " (aibuddy precompaction, summarize)"
				if n := formBytes(stub(sumHow, sum), images, model); n < out.BeforeBytes {
					body, how, kind, out.SummarizedBy = sum, sumHow, store.CompactionSummarize, by
				} else {
					why = fmt.Sprintf("the summary by %s (%s as compacted) was not smaller than the result (%s)", by,
						plural(n, "byte", "bytes"), plural(out.BeforeBytes, "byte", "bytes"))
				}
			}
			if kind == "" {
				out.Fallback = why
				how = "trimmed: " + why + " (aibuddy precompaction, summarize fell back to trim)"
			}
		}
		if kind == "" {
			kind = store.CompactionTrim
			if how == "" {
				how = "trimmed by aibuddy precompaction (trim)"
			}
			tr := TrimText(text, max(c.o.Target-120, 50), c.o.Counter, hint)
			body = tr.Text
			if tr.JSON {
				how += "; JSON keeps its structure, " + tr.Removed
			} else {
				how += "; " + tr.Removed
			}
		}
		compactText = stub(how, body)
	}
	out.AfterTokens = c.o.Counter(compactText)
	newModel := result.Wire{Content: append([]result.WireContent{{Type: "text", Text: compactText}}, images...),
		IsError: model.IsError, Stage: model.Stage}
	raw, err := json.Marshal(newModel)
	if err != nil {
		return out, fmt.Errorf("compact: encode: %w", err)
	}
	out.AfterBytes = len(raw)
	if out.AfterBytes >= out.BeforeBytes {
		out.Reason = "not smaller"
		return out, nil
	}
	if pointer != "" {
		if err := writeOffload(ctx, c.st, c.o.DataDir, pointer, cur); err != nil {
			return out, err
		}
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("compact: %s: %w", rec.ToolCallID, err)
	}
	ok, err := c.st.ReplaceModel(ctx, cur.ToolCallID, raw, kind, pointer)
	if err != nil {
		return out, fmt.Errorf("compact: replace model of %s: %w", rec.ToolCallID, err)
	}
	out.Replaced = ok
	if ok {
		out.Pointer = pointer
		c.o.Logger.Info("compact: compacted", "toolCallId", cur.ToolCallID, "kind", string(kind), "summarizedBy", out.SummarizedBy,
			"fallback", out.Fallback, "beforeBytes", out.BeforeBytes, "afterBytes", out.AfterBytes)
	} else {
		out.Reason = "not smaller"
	}
	return out, nil
}

// formBytes is the size in bytes of the model form holding text (and
// images), as Compact encodes it.
func formBytes(text string, images []result.WireContent, model result.Wire) int {
	raw, err := json.Marshal(result.Wire{Content: append([]result.WireContent{{Type: "text", Text: text}}, images...),
		IsError: model.IsError, Stage: model.Stage})
	if err != nil {
		return math.MaxInt
	}
	return len(raw)
}

// splitContent returns the joined text blocks and the other blocks.
func splitContent(w result.Wire) (string, []result.WireContent) {
	var texts []string
	var other []result.WireContent
	for _, c := range w.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		} else {
			other = append(other, c)
		}
	}
	return strings.Join(texts, "\n"), other
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// compactInput renders a call's input on one line for a stub: whole up to
// 300 characters, otherwise trimmed structurally (strings cut with counts).
func compactInput(in json.RawMessage) string {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, in) == nil && utf8.RuneCount(b.Bytes()) <= 300 {
		return b.String()
	}
	if root, err := parseOrdered(in); err == nil {
		var r bytes.Buffer
		var st trimStats
		render(&r, root, trimLevel{head: 2, tail: 0, keys: 8, str: 60, depth: 3}, 0, "", &st)
		var one bytes.Buffer
		if json.Compact(&one, r.Bytes()) == nil {
			return one.String()
		}
	}
	r := []rune(string(in))
	return string(r[:min(len(r), 300)]) + "…"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// fullOutputInfo describes the full output file behind a result.
type fullOutputInfo struct {
	tool         string // the tool whose result it is
	chars, lines int    // of the command's output; -1 when unknown
	bytes        int64  // of the file; -1 when it cannot be read
	viewable     bool   // view_tool_call reads it by default
}

func (f fullOutputInfo) describe() string {
	var b strings.Builder
	b.WriteString(f.tool + "'s projection of the command's output")
	if f.chars >= 0 && f.lines >= 0 {
		fmt.Fprintf(&b, " of %s in %s", plural(f.chars, "character", "characters"), plural(f.lines, "line", "lines"))
	}
	switch {
	case f.bytes >= 0:
		fmt.Fprintf(&b, " (full output file: %s)", plural64(f.bytes, "byte", "bytes"))
	default:
		b.WriteString(" (its full output file is no longer readable)")
	}
	return b.String()
}

// fullOutput reports whether rec's result names a full output file in its
// evidence (full_output_path), with the command's totals from the evidence
// (output_chars, output_lines) or else counted from the file.
func (c *Compactor) fullOutput(rec *store.Record) (fullOutputInfo, bool) {
	w, err := result.Decode(rec.Output)
	if err != nil {
		return fullOutputInfo{}, false
	}
	p, ok := w.Evidence[tool.EvidenceFullOutputPath].(string)
	if !ok || p == "" {
		return fullOutputInfo{}, false
	}
	f := fullOutputInfo{tool: rec.Tool, chars: evInt(w.Evidence, tool.EvidenceOutputChars), lines: evInt(w.Evidence, tool.EvidenceOutputLines), bytes: -1}
	_, f.viewable = fullOutputPath(c.o.FullOutputDir, w)
	file, err := os.Open(p)
	if err != nil {
		f.viewable = false
		return f, true
	}
	defer file.Close()
	if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
		f.bytes = fi.Size()
		if f.chars < 0 || f.lines < 0 {
			var st textStats
			if scanText(file, f.bytes, func(seg []byte) bool { st.add(seg, runeCount(seg)); return true }) == nil {
				f.chars, f.lines = st.chars, st.lines()
			}
		}
	} else {
		f.viewable = false
	}
	return f, true
}

// evInt is an integer evidence value (JSON numbers decode as float64), or -1.
func evInt(ev tool.Evidence, key tool.EvidenceKey) int {
	switch v := ev[key].(type) {
	case float64:
		return int(v)
	case int:
		return v
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	}
	return -1
}
