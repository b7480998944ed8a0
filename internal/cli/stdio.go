package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
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
// newline-delimited JSON-RPC messages). It is its own [mcp.Connection]
// (not the SDK's IOTransport): each inbound line is decoded once, here,
// and the decoded message is what the SDK reads; each outbound message is
// encoded once, and the answers to cancel are found from the message, not
// by decoding the frame again. Beyond the SDK's own stdio transport it:
//
//   - Does not end the session on a bad line: a line that is not a
//     JSON-RPC message gets a JSON-RPC error response (-32700 parse error,
//     or -32600 invalid request with the line's id when it has one; a line
//     over MaxFrame bytes, -32600; a batch once the session negotiated
//     protocol 2025-06-18 or later, which has no batches, -32600) and is
//     skipped.
//   - Does not drop answers at the end of input: every request read before
//     EOF is answered before the SDK sees the EOF (the SDK stops writing
//     at EOF), up to Grace; requests still running then are cancelled.
//   - Sends no response to a request the host cancelled
//     (notifications/cancelled; MCP spec, "Cancellation": receivers SHOULD
//     NOT send a response for a cancelled request; the SDK answers it
//     anyway).
//
// As the SDK's transport does, it takes JSON-RPC batches before protocol
// 2025-06-18 and answers the calls of a batch in one array once all of
// them are answered. Frames we write and the SDK writes never interleave
// (one lock, one Write per frame).
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
	t := newTracker()
	w := &frameWriter{w: out, t: t, logger: o.Logger, closed: make(chan struct{})}
	c := &stdioConn{w: w, incoming: make(chan []jsonrpc.Message), readErr: make(chan error, 1)}
	go func() {
		err := filterFrames(in, c, w, o.MaxFrame, o.Logger)
		if err == nil {
			w.drain(o.Grace)
			err = io.EOF
		}
		c.readErr <- err
	}()
	return c
}

// stdioConn is the [mcp.Connection] (and its own [mcp.Transport]) of
// guardedStdio.
type stdioConn struct {
	w        *frameWriter
	incoming chan []jsonrpc.Message // one inbound line's messages, decoded
	readErr  chan error             // the end of input (io.EOF) or a read error, once
	queue    []jsonrpc.Message      // the rest of a batch; Read is not concurrent

	mu      sync.Mutex
	initID  jsonrpc.ID // the initialize request's id, until answered
	version string     // the negotiated protocol version ("" before initialize)
	batches map[jsonrpc.ID]*inBatch
}

// inBatch collects the answers to the calls of one inbound batch.
type inBatch struct {
	open      int                 // calls not answered yet
	responses []*jsonrpc.Response // in the batch's order; nil for a dropped one
	index     map[jsonrpc.ID]int  // call id -> position in responses
}

// Connect implements [mcp.Transport]; it is called once.
func (c *stdioConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// SessionID implements [mcp.Connection]: stdio has none.
func (c *stdioConn) SessionID() string { return "" }

// Read implements [mcp.Connection]: the next message read from the host.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msgs := <-c.incoming:
		c.queue = msgs[1:]
		return msgs[0], nil
	case err := <-c.readErr:
		c.readErr <- err // every later Read ends the same way
		return nil, err
	case <-c.w.closed:
		return nil, io.EOF
	}
}

// Write implements [mcp.Connection]: one message to the host, unless it
// answers a request the host cancelled.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.writeMessages([]jsonrpc.Message{msg})
	}
	c.noteVersion(resp)
	drop := c.w.t.answer(resp.ID)
	if drop {
		c.w.logger.Debug("answer to a request the host cancelled not sent (MCP cancellation)", "responses", 1)
	}
	if batch, inBatch := c.resolve(resp, drop); inBatch {
		if len(batch) == 0 {
			return nil
		}
		return c.writeMessages(batch)
	}
	if drop {
		return nil
	}
	return c.writeMessages([]jsonrpc.Message{msg})
}

// Close implements [mcp.Connection]; it leaves stdout open (it belongs to
// the process) and ends a drain and any Read.
func (c *stdioConn) Close() error { return c.w.Close() }

// noteVersion keeps the protocol version of the initialize answer.
func (c *stdioConn) noteVersion(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initID.IsValid() || resp.ID != c.initID {
		return
	}
	c.initID = jsonrpc.ID{}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
		c.version = r.ProtocolVersion
	}
}

// batchesAllowed reports whether the session may still send batches: not
// after it negotiated 2025-06-18 or later (which removed them; the SDK
// ends the session on one).
func (c *stdioConn) batchesAllowed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version == "" || c.version < "2025-06-18"
}

// track notes an inbound message before the SDK sees it.
func (c *stdioConn) track(req *jsonrpc.Request) {
	if req.Method == "initialize" && req.IsCall() {
		c.mu.Lock()
		c.initID = req.ID
		c.mu.Unlock()
	}
	c.w.t.inbound(req)
}

// addBatch notes the calls of an inbound batch; false when one of its ids
// is already pending in another batch or repeats.
func (c *stdioConn) addBatch(reqs []*jsonrpc.Request) bool {
	b := &inBatch{index: map[jsonrpc.ID]int{}}
	for _, r := range reqs {
		if !r.IsCall() {
			continue
		}
		if _, dup := b.index[r.ID]; dup {
			return false
		}
		b.index[r.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if len(b.responses) == 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range b.index {
		if _, ok := c.batches[id]; ok {
			return false
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*inBatch{}
	}
	b.open = len(b.responses)
	for id := range b.index {
		c.batches[id] = b
	}
	return true
}

// resolve records resp (or its drop) in its batch; inBatch is false when
// it answers no batch. batch is the whole answer once every call of the
// batch is answered (empty when all were dropped), else nil.
func (c *stdioConn) resolve(resp *jsonrpc.Response, drop bool) (batch []jsonrpc.Message, inBatch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	if !drop {
		b.responses[b.index[resp.ID]] = resp
	}
	if b.open--; b.open > 0 {
		return nil, true
	}
	batch = []jsonrpc.Message{}
	for _, r := range b.responses {
		if r != nil {
			batch = append(batch, r)
		}
	}
	return batch, true
}

// writeMessages writes one frame: the message, or a JSON array of several.
func (c *stdioConn) writeMessages(msgs []jsonrpc.Message) error {
	var frame []byte
	if len(msgs) == 1 {
		b, err := encodeMessage(msgs[0])
		if err != nil {
			return err
		}
		frame = append(b, '\n')
	} else {
		frame = append(frame, '[')
		for i, m := range msgs {
			b, err := encodeMessage(m)
			if err != nil {
				return err
			}
			if i > 0 {
				frame = append(frame, ',')
			}
			frame = append(frame, b...)
		}
		frame = append(frame, ']', '\n')
	}
	_, err := c.w.writeRaw(frame)
	return err
}

// encodeMessage is jsonrpc.EncodeMessage, byte for byte, without
// re-encoding a successful response's result: the SDK made it with
// encoding/json (compact, no newline), so it is copied as it is. Anything
// else goes through jsonrpc.EncodeMessage.
func encodeMessage(m jsonrpc.Message) ([]byte, error) {
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error != nil || len(r.Result) == 0 || bytes.ContainsAny(r.Result, "\r\n") {
		return jsonrpc.EncodeMessage(m)
	}
	var id []byte
	switch v := r.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(nil, v, 10)
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as EncodeMessage's encoder
		if err := enc.Encode(v); err != nil {
			return jsonrpc.EncodeMessage(m)
		}
		id = bytes.TrimRight(buf.Bytes(), "\n")
	default:
		return jsonrpc.EncodeMessage(m)
	}
	b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(id)+len(r.Result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, r.Result...)
	return append(b, '}'), nil
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

// frameWriter serializes whole-frame writes to out; Close leaves out open
// (stdout belongs to the process) and ends a drain.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	t      *tracker
	logger *slog.Logger

	closeOnce sync.Once
	closed    chan struct{}
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

// filterFrames decodes the lines of in and hands their messages to c;
// lines that are not messages are answered on w. It returns nil at EOF.
func filterFrames(in io.Reader, c *stdioConn, w *frameWriter, maxFrame int, logger *slog.Logger) error {
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
		if len(line) == 0 && !errors.Is(err, bufio.ErrBufferFull) {
			// The whole line is in br's buffer: decode it there (the
			// messages copy what they keep).
			if ferr := c.frame(bytes.TrimSpace(chunk)); ferr != nil {
				return ferr
			}
		} else {
			line = append(line, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if ferr := c.frame(bytes.TrimSpace(line)); ferr != nil {
				return ferr
			}
			line = line[:0]
		}
		if err != nil {
			return eofNil(err)
		}
	}
}

// frame decodes one inbound line and hands its messages to Read, or
// answers it with an error. It returns an error only when the session
// closed.
func (c *stdioConn) frame(msg []byte) error {
	if len(msg) == 0 {
		return nil
	}
	msgs, reqs, id, code, why := checkFrame(msg)
	if code == 0 && msg[0] == '[' {
		switch {
		case !c.batchesAllowed():
			code, why = codeInvalidRequest, "invalid request: JSON-RPC batches are not part of MCP 2025-06-18 and later, which this session negotiated; send each message on its own line (it was skipped)"
		case !c.addBatch(reqs):
			code, why = codeInvalidRequest, "invalid request: the batch repeats a request id still unanswered; it was skipped"
		}
	}
	if code != 0 {
		reply(c.w, id, code, why, c.w.logger)
		return nil
	}
	// Tracked before the SDK can answer.
	for _, r := range reqs {
		c.track(r)
	}
	select {
	case c.incoming <- msgs:
		return nil
	case <-c.w.closed:
		return io.ErrClosedPipe
	}
}

func eofNil(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// checkFrame decodes msg, a JSON-RPC message or a batch of them, once:
// it returns the messages and the requests among them; when the SDK
// could not take it, the id to answer (nil when unknown), the error code
// and why.
func checkFrame(msg []byte) (msgs []jsonrpc.Message, reqs []*jsonrpc.Request, id json.RawMessage, code int, why string) {
	if msg[0] != '[' {
		m, err := decodeMessage(msg)
		if err != nil {
			if !json.Valid(msg) {
				return nil, nil, nil, codeParseError, "parse error: the line is not JSON; it was skipped"
			}
			return nil, nil, probeID(msg), codeInvalidRequest, fmt.Sprintf("invalid request: %v; it was skipped", err)
		}
		if r, ok := m.(*jsonrpc.Request); ok {
			reqs = []*jsonrpc.Request{r}
		}
		return []jsonrpc.Message{m}, reqs, nil, 0, ""
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 {
		if !json.Valid(msg) {
			return nil, nil, nil, codeParseError, "parse error: the line is not JSON; it was skipped"
		}
		return nil, nil, nil, codeInvalidRequest, "invalid request: an empty or malformed batch; it was skipped"
	}
	for _, it := range batch {
		m, err := decodeMessage(it)
		if err != nil {
			return nil, nil, probeID(it), codeInvalidRequest, fmt.Sprintf("invalid request: %v; it was skipped", err)
		}
		msgs = append(msgs, m)
		if r, ok := m.(*jsonrpc.Request); ok {
			reqs = append(reqs, r)
		}
	}
	return msgs, reqs, nil, 0, ""
}

// probeID is the "id" member of a JSON object, nil when none.
func probeID(b []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &probe)
	return probe.ID
}

// decodeMessage is jsonrpc.DecodeMessage for a request (a message with a
// "method" member), decoded with encoding/json into exact-case members
// (the SDK's decoder matches member names by case too) instead of the
// SDK's decoder, which allocates tens of KiB per message. A response (a
// host's answer to our request: rare) goes to jsonrpc.DecodeMessage.
func decodeMessage(b []byte) (jsonrpc.Message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	method, ok := m["method"]
	if !ok {
		return jsonrpc.DecodeMessage(b)
	}
	var version string
	if v, ok := m["jsonrpc"]; ok {
		if err := json.Unmarshal(v, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	var rawID any
	if v, ok := m["id"]; ok {
		if err := json.Unmarshal(v, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	var name string
	if err := json.Unmarshal(method, &name); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	return &jsonrpc.Request{Method: name, ID: id, Params: m["params"]}, nil
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
