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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrameBytes is the largest inbound stdio frame (one line of
// JSON-RPC, bytes) `aibuddy mcp` accepts when mcp.maxFrameBytes is unset.
const DefaultMaxFrameBytes = 64 << 20

// JSON-RPC 2.0 error codes (jsonrpc.org/specification, "Error object").
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// guardedStdio is the stdio transport of `aibuddy mcp` (MCP spec, "stdio":
// newline-delimited JSON-RPC messages). The SDK's own stdio transport ends
// the session at the first line that is not a JSON-RPC message or that
// exceeds its frame limit; here each inbound line is checked first: a bad
// line gets a JSON-RPC error response (-32700 parse error, or -32600
// invalid request with the line's id when it has one; a line over
// maxFrame bytes, -32600) and is skipped, and the session goes on. Frames
// we write and the SDK writes never interleave (one lock, one Write per
// frame).
func guardedStdio(in io.Reader, out io.Writer, maxFrame int, logger *slog.Logger) mcp.Transport {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	pr, pw := io.Pipe()
	w := &frameWriter{w: out}
	go func() {
		pw.CloseWithError(filterFrames(in, pw, w, maxFrame, logger))
	}()
	return &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}
}

// frameWriter serializes whole-frame writes to out; Close leaves out open
// (stdout belongs to the process).
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *frameWriter) Close() error { return nil }

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
			if id, code, why := checkFrame(msg); code != 0 {
				reply(w, id, code, why, logger)
			} else if _, werr := pass.Write(append(msg, '\n')); werr != nil {
				return werr
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

// checkFrame reports whether msg is a JSON-RPC message (or a batch of
// them) the SDK can take; otherwise the id to answer (nil when unknown),
// the error code and why.
func checkFrame(msg []byte) (id json.RawMessage, code int, why string) {
	if !json.Valid(msg) {
		return nil, codeParseError, "parse error: the line is not JSON; it was skipped"
	}
	items := [][]byte{msg}
	if msg[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(msg, &batch); err != nil || len(batch) == 0 {
			return nil, codeInvalidRequest, "invalid request: an empty or malformed batch; it was skipped"
		}
		items = items[:0]
		for _, b := range batch {
			items = append(items, b)
		}
	}
	for _, it := range items {
		if _, err := jsonrpc.DecodeMessage(it); err != nil {
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(it, &probe)
			return probe.ID, codeInvalidRequest, fmt.Sprintf("invalid request: %v; it was skipped", err)
		}
	}
	return nil, 0, ""
}

// reply writes one JSON-RPC error response.
func reply(w *frameWriter, id json.RawMessage, code int, msg string, logger *slog.Logger) {
	if len(id) == 0 || string(id) == "null" {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg}})
	logger.Warn("inbound MCP frame refused", "code", code, "reason", msg)
	_, _ = w.Write(append(b, '\n'))
}
