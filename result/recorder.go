package result

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Compactor receives each finished record and may compact its model form
// later. Schedule must not block on the compaction itself: the call's
// result is handed back right after it returns (seed: compaction starts
// "without delaying delivery to the client"). ctx is the call's context;
// a stop that cancels it also stops the background work.
// *compact.Compactor implements it.
type Compactor interface {
	Schedule(ctx context.Context, rec *store.Record)
}

// Options configure a [Recorder]. A nil *Options means the defaults.
type Options struct {
	// Background is the context background compaction runs under: a
	// host whose call contexts end with the reply (an MCP server) passes
	// its run's context so compaction outlives the reply and still stops
	// with the run. Default: the call's context.
	Background context.Context
	// Now is the clock of the record timestamps. Default time.Now.
	Now func() time.Time
	// NewID mints a toolCallId for a call that has none. Default: "call_"
	// and 16 random hex digits.
	NewID func() string
	// Compactor, when set, receives every finished record.
	Compactor Compactor
	// OnClient, when set, receives the client projection when the call
	// starts (status running) and when its final record is written.
	OnClient func(Client)
	// Logger receives store failures. Default: discard.
	Logger *slog.Logger
	// MaxModelChars bounds the text of the result a call hands back (the
	// model projection), in characters (runes): a larger result keeps its
	// head and tail with a header naming what was omitted and the
	// view_tool_call that recovers it (see [Bound]); the record keeps the
	// raw output whole. Default [DefaultMaxModelChars] (30,000).
	MaxModelChars int
}

// Recorder is the middleware that keeps the durable record of each call.
// It is safe for concurrent calls.
type Recorder struct {
	st   store.Store
	opts Options
}

// New returns a recorder writing to st. opts may be nil.
func New(st store.Store, opts *Options) *Recorder {
	r := &Recorder{st: st}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	if r.opts.NewID == nil {
		r.opts.NewID = randomID
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// Next is the handler a [Recorder] wraps: capability.Set.Call, a
// discovery run's Dispatch, or a single tool's Call.
type Next func(ctx context.Context, call *tool.Call) *tool.Result

// Call runs call through next and keeps its record under taskID:
//
//  1. a record with outcome "running", the raw input and the start time is
//     Put before next runs (a crash leaves a trace); a call without an ID
//     gets one from Options.NewID first, so call.ID is set on return;
//  2. next runs with ctx carrying taskID ([tool.WithTaskID]; tools read it
//     with tool.TaskID);
//  3. the final record (raw output and model form, both whole, so that
//     compaction works from, and its stub counts, the complete result;
//     stage, outcome, end time) is Put, and only then is the result
//     returned bounded to Options.MaxModelChars by [Bound]: the result
//     itself when it is within the bound, else a copy whose header names
//     the omitted characters and lines and the view_tool_call that
//     recovers them from this record (case BH-049);
//  4. the record goes to Options.Compactor, which works in the background.
//
// Outcome is "cancelled" for an error result when ctx is done or the
// result's evidence says cancelled, "error" for other error results, "ok"
// otherwise. The store writes use ctx without its cancellation, so a
// stopped call still records how it ended. When a write fails the result
// is returned all the same with a note appended that the record is
// missing (the plane failed, not the tool), and the failure is logged.
func (r *Recorder) Call(ctx context.Context, taskID string, call *tool.Call, next Next) *tool.Result {
	return r.CallWith(ctx, taskID, call, next, CallOptions{})
}

// CallOptions say what [Recorder.CallWith] may assume of a call.
type CallOptions struct {
	// ReadOnly: the tool changes nothing (its readOnlyHint), so a kill
	// while it runs needs no record. Its running record is then given
	// to a store that implements [store.Deferrer] with PutDeferred: a
	// call that ends within the store's bound (records.runningDelay)
	// writes its record once, a longer one still shows as running.
	ReadOnly bool
}

// CallWith is [Recorder.Call] with what o says of the call.
func (r *Recorder) CallWith(ctx context.Context, taskID string, call *tool.Call, next Next, o CallOptions) *tool.Result {
	if call.ID == "" {
		call.ID = r.opts.NewID()
	}
	input := bytes.TrimSpace(call.Input)
	if len(input) == 0 {
		input = []byte("{}")
	}
	rec := &store.Record{
		ToolCallID: call.ID, ProviderCallID: call.ProviderID, TaskID: taskID, Tool: call.Name,
		Input:   append(json.RawMessage(nil), input...),
		Outcome: store.OutcomeRunning, StartedAt: r.opts.Now(),
	}
	sctx := context.WithoutCancel(ctx)
	var startErr error
	d, deferred := r.st.(store.Deferrer)
	deferred = deferred && o.ReadOnly
	if deferred {
		startErr = d.PutDeferred(sctx, rec) // the final Put keeps its place
	} else {
		startErr = r.st.Put(sctx, rec)
	}
	if startErr == nil && rec.Seq == 0 && !deferred {
		// Keep the start order on the final Put: a result is stored at its
		// call's place, never after calls that started later (BH-053).
		if got, err := r.st.Get(sctx, call.ID); err == nil {
			rec.Seq = got.Seq
		}
	}
	if startErr != nil {
		r.opts.Logger.Error("result: record call start", "toolCallId", call.ID, "err", startErr)
	}
	if r.opts.OnClient != nil {
		r.opts.OnClient(ClientOf(rec))
	}

	res := next(tool.WithTaskID(ctx, taskID), call)
	if res == nil {
		res = &tool.Result{}
	}

	done := *rec
	done.EndedAt = r.opts.Now()
	done.Output = EncodeOutput(res)
	done.Model = EncodeModel(res)
	model := Bound(res, call.ID, r.opts.MaxModelChars, true)
	done.Stage = string(res.Stage)
	done.Outcome = outcomeOf(ctx, res)
	if !res.IsError {
		done.Stage = ""
	}
	err := r.st.Put(sctx, &done)
	if err != nil {
		r.opts.Logger.Error("result: record call end", "toolCallId", call.ID, "err", err)
		model = Bound(res, call.ID, r.opts.MaxModelChars, false)
		return withNote(model, fmt.Sprintf("note: the durable record of this call (toolCallId=%s) could not be written (%v); view_tool_call cannot recover it", call.ID, err))
	}
	if r.opts.OnClient != nil {
		r.opts.OnClient(ClientOf(&done))
	}
	if r.opts.Compactor != nil {
		cp := done
		bg := ctx
		if r.opts.Background != nil {
			bg = r.opts.Background
		}
		r.opts.Compactor.Schedule(bg, &cp)
	}
	return model
}

func outcomeOf(ctx context.Context, res *tool.Result) store.Outcome {
	if !res.IsError {
		return store.OutcomeOK
	}
	if ctx.Err() != nil {
		return store.OutcomeCancelled
	}
	if c, ok := res.Evidence[tool.EvidenceCancelled].(bool); ok && c {
		return store.OutcomeCancelled
	}
	return store.OutcomeError
}

// withNote returns a copy of res with note as a last text block.
func withNote(res *tool.Result, note string) *tool.Result {
	cp := *res
	cp.Content = append(append([]tool.Content(nil), res.Content...), tool.Content{Type: tool.TextContent, Text: note})
	return &cp
}
