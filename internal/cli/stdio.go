package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrameBytes is the largest inbound stdio frame (one line of
// JSON-RPC, bytes) `aibuddy mcp` accepts when mcp.maxFrameBytes is unset.
const DefaultMaxFrameBytes = 64 << 20

// DefaultDrainGrace is how long `aibuddy mcp` over stdio lets requests it
// has read finish after the host closed its input, when mcp.drainGrace is
// unset.
const DefaultDrainGrace = 10 * time.Second

// JSON-RPC 2.0 error codes (jsonrpc.org/specification, "Error object").
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

const methodCancelled = "notifications/cancelled"

// stdioOptions configures guardedStdio; zero values are the defaults.
type stdioOptions struct {
	MaxFrame int           // bytes of one inbound line; default DefaultMaxFrameBytes
	Grace    time.Duration // drain after end of input; default DefaultDrainGrace
	Logger   *slog.Logger
}

// guardedStdio is the stdio transport of `aibuddy mcp` (MCP spec, "stdio":
// newline-delimited JSON-RPC messages) around the SDK's IOTransport. It
// adds three things the SDK's own stdio transport does not do:
//
//   - A bad line does not end the session: each inbound line is checked
//     first, and a line that is not a JSON-RPC message gets a JSON-RPC
//     error response (-32700 parse error, or -32600 invalid request with
//     the line's id when it has one; a line over MaxFrame bytes, -32600)
//     and is skipped.
//   - The end of input does not drop answers: every request read before
//     EOF is answered before the SDK sees the EOF (the SDK stops writing
//     at EOF), up to Grace; requests still running then are cancelled.
//   - A request the host cancelled (notifications/cancelled) gets no
//     response (MCP spec, "Cancellation": receivers SHOULD NOT send a
//     response for a cancelled request; the SDK answers it anyway).
//
// Frames we write and the SDK writes never interleave (one lock, one Write
// per frame).
func guardedStdio(in io.Reader, out io.Writer, o stdioOptions) mcp.Transport {
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrameBytes
	}
	if o.Grace <= 0 {
		o.Grace = DefaultDrainGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	pr, pw := io.Pipe()
	t := newTracker()
	w := &frameWriter{w: out, t: t, logger: o.Logger, closed: make(chan struct{})}
	go func() {
		err := filterFrames(in, pw, w, o.MaxFrame, o.Logger)
		if err == nil {
			w.drain(o.Grace)
		}
		pw.CloseWithError(err)
	}()
	return &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}
}

// tracker follows the requests read from the host that are not answered
// yet, and those the host cancelled (whose answer is dropped).
type tracker struct {
	mu        sync.Mutex
	open      map[jsonrpc.ID]int
	cancelled map[jsonrpc.ID]bool
	changed   chan struct{} // closed and replaced when open shrinks
}

func newTracker() *tracker {
	return &tracker{open: map[jsonrpc.ID]int{}, cancelled: map[jsonrpc.ID]bool{}, changed: make(chan struct{})}
}

// inbound notes a message passed to the SDK.
func (t *tracker) inbound(req *jsonrpc.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case req.IsCall():
		t.open[req.ID]++
	case req.Method == methodCancelled:
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		id, err := jsonrpc.MakeID(p.RequestID)
		if err != nil || t.open[id] == 0 {
			return // unknown or already answered: nothing to drop (spec: MAY ignore)
		}
		t.cancelled[id] = true
		t.doneLocked(id)
	}
}

func (t *tracker) doneLocked(id jsonrpc.ID) {
	if t.open[id] <= 1 {
		delete(t.open, id)
	} else {
		t.open[id]--
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// answer notes an outgoing response for id and reports whether it must be
// dropped (the host cancelled that request).
func (t *tracker) answer(id jsonrpc.ID) (drop bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancelled[id] {
		delete(t.cancelled, id)
		return true
	}
	if t.open[id] > 0 {
		t.doneLocked(id)
	}
	return false
}

// pending returns how many requests are unanswered and a channel closed
// at the next change.
func (t *tracker) pending() (int, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.open {
		n += c
	}
	return n, t.changed
}

// frameWriter serializes whole-frame writes to out and drops the answers
// to cancelled requests; Close leaves out open (stdout belongs to the
// process) and ends a drain.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	t      *tracker
	logger *slog.Logger

	closeOnce sync.Once
	closed    chan struct{}
}

// Write takes one frame of the SDK (a message or a batch, newline
// terminated).
func (f *frameWriter) Write(p []byte) (int, error) {
	frame, dropped := f.filterAnswers(p)
	if dropped > 0 {
		f.logger.Debug("answer to a request the host cancelled not sent (MCP cancellation)", "responses", dropped)
	}
	if len(frame) == 0 {
		return len(p), nil
	}
	if _, err := f.writeRaw(frame); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *frameWriter) writeRaw(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *frameWriter) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

// outgoing is the part of an outgoing message the tracker needs.
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// filterAnswers returns p without the responses to cancelled requests
// (nil when nothing is left) and how many it removed.
func (f *frameWriter) filterAnswers(p []byte) ([]byte, int) {
	msg := bytes.TrimSpace(p)
	if len(msg) == 0 {
		return p, 0
	}
	if msg[0] != '[' {
		var m outgoing
		if json.Unmarshal(msg, &m) != nil || !f.answered(m) {
			return p, 0
		}
		return nil, 1
	}
	var batch []json.RawMessage
	if json.Unmarshal(msg, &batch) != nil {
		return p, 0
	}
	kept := batch[:0]
	for _, item := range batch {
		var m outgoing
		if json.Unmarshal(item, &m) == nil && f.answered(m) {
			continue
		}
		kept = append(kept, item)
	}
	dropped := len(batch) - len(kept)
	switch {
	case dropped == 0:
		return p, 0
	case len(kept) == 0:
		return nil, dropped
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return p, 0
	}
	return append(b, '\n'), dropped
}

// answered notes m when it is a response and reports whether to drop it.
func (f *frameWriter) answered(m outgoing) bool {
	if m.Method != nil || len(m.ID) == 0 {
		return false // a request or notification of ours
	}
	var raw any
	if json.Unmarshal(m.ID, &raw) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil || !id.IsValid() {
		return false
	}
	return f.t.answer(id)
}

// drain waits, after the host closed its input, until every request read
// is answered (or cancelled by the host), grace has passed, or the
// session closed.
func (f *frameWriter) drain(grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		n, changed := f.t.pending()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-f.closed:
			return
		case <-timer.C:
			f.logger.Warn("the host closed stdin; requests still running after the grace are cancelled unanswered (raise mcp.drainGrace to wait longer)",
				"requests", n, "grace", grace)
			return
		}
	}
}

// filterFrames copies the valid lines of in to pass and answers the others
// on w. It returns nil at EOF.
func filterFrames(in io.Reader, pass io.Writer, w *frameWriter, maxFrame int, logger *slog.Logger) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxFrame {
			// Too large: drop the rest of this line without holding it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			line = line[:0]
			reply(w, nil, codeInvalidRequest, fmt.Sprintf("message over the %d-byte frame limit (setting mcp.maxFrameBytes); it was skipped", maxFrame), logger)
			if err != nil {
				return eofNil(err)
			}
			continue
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if msg := bytes.TrimSpace(line); len(msg) > 0 {
			reqs, id, code, why := checkFrame(msg)
			if code != 0 {
				reply(w, id, code, why, logger)
			} else {
				// Tracked before the SDK can answer.
				for _, r := range reqs {
					w.t.inbound(r)
				}
				if _, werr := pass.Write(append(msg, '\n')); werr != nil {
					return werr
				}
			}
		}
		line = line[:0]
		if err != nil {
			return eofNil(err)
		}
	}
}

func eofNil(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// checkFrame decodes msg, a JSON-RPC message or a batch of them, and
// returns its requests; when the SDK could not take it, the id to answer
// (nil when unknown), the error code and why.
func checkFrame(msg []byte) (reqs []*jsonrpc.Request, id json.RawMessage, code int, why string) {
	if !json.Valid(msg) {
		return nil, nil, codeParseError, "parse error: the line is not JSON; it was skipped"
	}
	items := [][]byte{msg}
	if msg[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 {
			return nil, nil, codeInvalidRequest, "invalid request: an empty or malformed batch; it was skipped"
		}
		items = items[:0]
		for _, b := range batch {
			items = append(items, b)
		}
	}
	for _, it := range items {
		m, err := jsonrpc.DecodeMessage(it)
		if err != nil {
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(it, &probe)
			return nil, probe.ID, codeInvalidRequest, fmt.Sprintf("invalid request: %v; it was skipped", err)
		}
		if r, ok := m.(*jsonrpc.Request); ok {
			reqs = append(reqs, r)
		}
	}
	return reqs, nil, 0, ""
}

// reply writes one JSON-RPC error response.
func reply(w *frameWriter, id json.RawMessage, code int, msg string, logger *slog.Logger) {
	if len(id) == 0 || string(id) == "null" {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg}})
	logger.Warn("inbound MCP frame refused", "code", code, "reason", msg)
	_, _ = w.writeRaw(append(b, '\n'))
}
