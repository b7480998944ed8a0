package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// DefaultMaxFrameBytes is Options.MaxFrameBytes when unset: the MCP SDK's
// own bound on one inbound stdio line (mcp.DefaultMaxLineLength, 16 MiB).
const DefaultMaxFrameBytes = 16 << 20

// frame keeps one bad inbound message from closing the connection: the
// SDK ends the whole session on a line it cannot decode or one over its
// size bound, which took every tool of the server with it (issue 13). A
// message over Options.MaxFrameBytes that is a response becomes a
// JSON-RPC error for that request id, so only that call fails; a line
// that is not JSON, or an oversized message without an id, is dropped and
// logged (lines: the stdio transport, one message a line; an HTTP JSON
// body may span lines). Anything else comes back as it is. line may end
// in a newline; nil means drop.
func (c *conn) frame(line []byte, lines bool) []byte {
	if line == nil {
		return nil
	}
	limit := c.m.opts.MaxFrameBytes
	body := bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(body)) == 0 {
		return line
	}
	if len(body) > limit {
		id, ok := topLevelID(body)
		if !ok {
			c.m.opts.Logger.Warn("mcp message over the frame limit dropped", "server", c.cfg.Name, "bytes", len(body), "limit", limit)
			return nil
		}
		c.m.opts.Logger.Warn("mcp response over the frame limit replaced by an error", "server", c.cfg.Name, "bytes", len(body), "limit", limit)
		msg := fmt.Sprintf("the server's answer is %d bytes, over the %d-byte frame limit (setting mcp.upstreamMaxFrameBytes); it was dropped", len(body), limit)
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32603, "message": msg}})
		return append(out, '\n')
	}
	if b := bytes.TrimSpace(body); lines && (b[0] != '{' && b[0] != '[' || !json.Valid(b)) {
		shown := string(b)
		if len(shown) > 120 {
			shown = shown[:120] + "…"
		}
		c.m.opts.Logger.Warn("mcp line that is not JSON-RPC dropped", "server", c.cfg.Name, "line", strings.ToValidUTF8(shown, "\uFFFD"))
		return nil
	}
	return c.reportSurrogates(line) // BH-097 (surrogate.go)
}

// topLevelID finds the "id" member of the JSON object in msg without
// decoding the rest (an SDK may write it first or last), in one pass.
func topLevelID(msg []byte) (json.RawMessage, bool) {
	depth := 0
	inString, escaped := false, false
	keyStart := -1
	var key []byte
	expectValue := false
	for i := 0; i < len(msg); i++ {
		b := msg[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
				if depth == 1 && keyStart >= 0 {
					key = msg[keyStart:i]
					keyStart = -1
				}
			}
			continue
		}
		switch b {
		case '"':
			inString = true
			if depth == 1 && !expectValue {
				keyStart = i + 1
			}
		case ':':
			if depth == 1 {
				expectValue = true
				if string(key) == "id" {
					return scanValue(msg[i+1:])
				}
			}
		case ',':
			if depth == 1 {
				expectValue, key = false, nil
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return nil, false
}

// scanValue reads one scalar JSON value (a request id: number or string)
// at the start of b.
func scanValue(b []byte) (json.RawMessage, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return nil, false
	}
	if b[0] == '"' {
		for i := 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return json.RawMessage(b[:i+1]), true
			}
		}
		return nil, false
	}
	end := bytes.IndexAny(b, ",} \t\r\n")
	if end <= 0 {
		return nil, false
	}
	v := json.RawMessage(b[:end])
	return v, json.Valid(v)
}
