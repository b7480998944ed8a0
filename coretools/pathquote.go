package coretools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// File names are printed so that one entry is one line and nothing in a
// name reaches a terminal or a reader as anything but text: ls, glob and
// grep show a path holding a control character (newline, ESC), a
// format character (the bidi controls U+202A-U+202E and U+2066-U+2069,
// zero-width and tag characters), any other unprintable rune (a space
// other than U+0020, U+2028), invalid UTF-8, a double quote or a backslash
// as a double-quoted string with escapes; every other path as it is.
//
// The escapes are those of a JSON string (\n, \t, \", \\, \u001b,
// \u202e, surrogate pairs above U+FFFF), so a quoted path pasted as the
// JSON string value of a path parameter is the file's name; the one
// addition is \xNN for a byte that is not UTF-8, which JSON cannot carry.
// For that, and for convenience, every path parameter also accepts the
// quoted form itself as its value (fsPathArg).

// fsShowPath renders p for the tools' text output.
func fsShowPath(p string) string {
	if !needsQuote(p) {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); {
		r, w := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case strconv.IsPrint(r):
			b.WriteString(p[i : i+w])
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		}
		i += w
	}
	b.WriteByte('"')
	return b.String()
}

// needsQuote reports whether p holds anything fsShowPath escapes.
func needsQuote(p string) bool {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
				return true
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(p[i:])
		if (r == utf8.RuneError && w == 1) || !strconv.IsPrint(r) {
			return true
		}
		i += w
	}
	return false
}

// fsPathArg is a path parameter as the tools use it: a value that is a
// whole quoted path as fsShowPath prints it (starting and ending with a
// double quote, with valid escapes) is unquoted; any other value is the
// path itself.
func fsPathArg(p string) string {
	if len(p) < 2 || p[0] != '"' || p[len(p)-1] != '"' {
		return p
	}
	if u, ok := unquotePath(p[1 : len(p)-1]); ok {
		return u
	}
	return p
}

// unquotePath undoes fsShowPath's escapes in s (the text between the
// quotes); ok is false when s holds an unknown escape or a bare quote.
func unquotePath(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			return "", false
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'x':
			v, err := strconv.ParseUint(s[min(i+1, len(s)):min(i+3, len(s))], 16, 8)
			if err != nil || i+3 > len(s) {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		case 'u':
			r, n, ok := hex4(s, i+1)
			if !ok {
				return "", false
			}
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, n2, ok := hex4(s, i+3); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 2 + n2
						}
					}
				}
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// hex4 reads four hex digits of s at i; n is how many bytes it used.
func hex4(s string, i int) (r rune, n int, ok bool) {
	if i+4 > len(s) {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 16)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), 4, true
}

// fsShownPaths wraps the handler of a tool whose input names one file in
// "path" (read_file, write_file, edit_file): when that name holds
// anything fsShowPath escapes, every place the raw name stands in the
// result's text or the error's message is replaced by its quoted form, so
// that messages built from it ("X is empty", "wrote N bytes to X", the
// sandbox's own errors) never carry a raw newline, ESC or bidi control to
// the model or a terminal. Evidence keeps the raw name (it is JSON).
func fsShownPaths(h tool.Handler) tool.Handler {
	return func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		var in struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(call.Input, &in)
		raw := fsPathArg(in.Path)
		res, err := h(ctx, call)
		if raw == "" || !needsQuote(raw) {
			return res, err
		}
		shown := fsShowPath(raw)
		if res != nil {
			for i := range res.Content {
				if res.Content[i].Type == tool.TextContent {
					res.Content[i].Text = strings.ReplaceAll(res.Content[i].Text, raw, shown)
				}
			}
		}
		var te *tool.Error
		if errors.As(err, &te) {
			te.Msg = strings.ReplaceAll(te.Msg, raw, shown)
			te.Hint = strings.ReplaceAll(te.Hint, raw, shown)
		}
		return res, err
	}
}
