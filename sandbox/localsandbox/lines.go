package localsandbox

import (
	"bufio"
	"io"
	"unicode/utf8"
)

// lineScanner streams lines from a reader with a bounded buffer: of each
// line it keeps at most keep bytes and counts the characters of the whole
// line, so a 2,000,000-character line costs keep bytes of memory (BH-014).
// Line endings ("\n" or "\r\n") are not part of the line.
type lineScanner struct {
	br   *bufio.Reader
	keep int    // bytes of each line kept
	buf  []byte // the kept prefix of the current line
	eof  bool
	// chunks counts ReadSlice calls, for periodic ctx checks.
	chunks int
}

func newLineScanner(r io.Reader, keep int) *lineScanner {
	return &lineScanner{br: bufio.NewReaderSize(r, readBufBytes), keep: keep}
}

// next returns the kept prefix of the next line (valid until the next call),
// the characters in the whole line, and whether the prefix is the whole
// line. It returns io.EOF after the last line; a final line without a line
// ending is still a line. stop is polled between chunks of a long line.
func (ls *lineScanner) next(stop func() error) (kept []byte, chars int, whole bool, err error) {
	if ls.eof {
		return nil, 0, false, io.EOF
	}
	ls.buf = ls.buf[:0]
	total := 0    // bytes in the line so far (without "\n")
	var last byte // last byte of the line so far
	seen := false
	for {
		chunk, rerr := ls.br.ReadSlice('\n')
		ls.chunks++
		if len(chunk) > 0 {
			seen = true
		}
		ended := rerr == nil
		if ended {
			chunk = chunk[:len(chunk)-1]
		}
		if len(chunk) > 0 {
			chars += countChars(chunk)
			total += len(chunk)
			last = chunk[len(chunk)-1]
			if room := ls.keep - len(ls.buf); room > 0 {
				ls.buf = append(ls.buf, chunk[:min(room, len(chunk))]...)
			}
		}
		switch {
		case ended:
		case rerr == bufio.ErrBufferFull:
			if stop != nil && ls.chunks%ctxCheckEvery == 0 {
				if err := stop(); err != nil {
					return nil, 0, false, err
				}
			}
			continue
		case rerr == io.EOF:
			ls.eof = true
			if !seen {
				return nil, 0, false, io.EOF
			}
		default:
			return nil, 0, false, rerr
		}
		if total > 0 && last == '\r' && ended {
			chars--
			if len(ls.buf) == total {
				ls.buf = ls.buf[:len(ls.buf)-1]
			}
			total--
		}
		return ls.buf, chars, len(ls.buf) == total, nil
	}
}

// countChars counts the characters (rune starts) in a chunk of UTF-8; it is
// exact across chunk boundaries for valid UTF-8.
func countChars(b []byte) int {
	n := 0
	for _, c := range b {
		if c&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// clipChars returns the prefix of b holding at most n characters, cut at a
// rune boundary.
func clipChars(b []byte, n int) []byte {
	if n <= 0 {
		return b[:0]
	}
	count := 0
	for i := range b {
		if b[i]&0xC0 != 0x80 {
			if count == n {
				return b[:i]
			}
			count++
		}
	}
	return b
}

// clipBytes cuts b to at most n bytes at a rune boundary.
func clipBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
