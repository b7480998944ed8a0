package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// loneSurrogates replaces every \uXXXX escape in msg's JSON strings that
// is half of a UTF-16 surrogate pair without its other half (D800-DFFF
// alone: not a character, so not encodable as UTF-8) with \ufffd, and
// returns the new message, how many it replaced and the byte offsets in
// msg of the first 8. A Go JSON decoder (the SDK's) would make each one
// U+FFFD silently (case BH-097); this makes it countable. msg is returned
// as it is when it has none.
func loneSurrogates(msg []byte) (out []byte, n int, at []int) {
	if !bytes.Contains(msg, []byte(`\u`)) {
		return msg, 0, nil
	}
	hex4 := func(i int) (rune, bool) { // the escape at msg[i:i+6]
		if i+6 > len(msg) || msg[i] != '\\' || msg[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(msg[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	inString := false
	for i := 0; i < len(msg); i++ {
		b := msg[i]
		if !inString {
			if b == '"' {
				inString = true
			}
			continue
		}
		switch b {
		case '"':
			inString = false
		case '\\':
			r, ok := hex4(i)
			if !ok {
				i++ // another escape: skip its character
				continue
			}
			if r >= 0xD800 && r <= 0xDBFF {
				if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11 // a whole pair
					continue
				}
			}
			if r >= 0xD800 && r <= 0xDFFF {
				if out == nil {
					out = append([]byte(nil), msg...)
				}
				copy(out[i:i+6], `\ufffd`)
				if len(at) < 8 {
					at = append(at, i)
				}
				n++
			}
			i += 5
		}
	}
	if out == nil {
		return msg, 0, nil
	}
	return out, n, at
}

// reportSurrogates is the frame step of loneSurrogates: a message with
// lone surrogate escapes gets them as \ufffd, and when it is a tool
// result, a last text content block saying how many and where, so the
// model and the record see that the server's text was altered; the
// replacement is logged either way.
func (c *conn) reportSurrogates(body []byte) []byte {
	out, n, at := loneSurrogates(body)
	if n == 0 {
		return body
	}
	c.m.opts.Logger.Warn("mcp message with lone UTF-16 surrogate escapes: replaced with U+FFFD", "server", c.cfg.Name, "count", n, "offsets", at)
	var env map[string]json.RawMessage
	if json.Unmarshal(out, &env) != nil || env["result"] == nil {
		return out
	}
	var res map[string]json.RawMessage
	var content []json.RawMessage
	if json.Unmarshal(env["result"], &res) != nil || json.Unmarshal(res["content"], &content) != nil || res["content"] == nil {
		return out
	}
	word := "escapes"
	if n == 1 {
		word = "escape"
	}
	note := fmt.Sprintf("note: MCP server %s sent %d lone UTF-16 surrogate %s (\\uD800-\\uDFFF without its pair, not a character) in this answer; each is shown as U+FFFD (byte offsets %v of its message)", c.cfg.Name, n, word, at)
	block, _ := json.Marshal(map[string]string{"type": "text", "text": note})
	content = append(content, block)
	res["content"], _ = json.Marshal(content)
	env["result"], _ = json.Marshal(res)
	fixed, err := json.Marshal(env)
	if err != nil {
		return out
	}
	if bytes.HasSuffix(body, []byte("\n")) {
		fixed = append(fixed, '\n')
	}
	return fixed
}
