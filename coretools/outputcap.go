package coretools

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/tool"
)

// This file builds the model projection of a command's output as the output
// is produced (seed: "Shell output is capped at 30,000 characters before it
// enters model context ... Enforcing this boundary as output is produced is
// more reliable than waiting for context pressure").
//
// Raw chunks of stdout and stderr go through three stages, under one lock,
// in arrival order:
//
//  1. the record: each chunk is appended to the full output file, if any;
//  2. the client: each chunk is emitted as a transient tool.Event (a copy);
//  3. the model: each stream is normalized (ANSI escape sequences stripped,
//     carriage-return frames collapsed, invalid UTF-8 and control bytes
//     replaced or dropped, binary data counted instead of shown) into
//     complete lines, which the head+tail accumulator keeps within the cap.
//
// Memory stays bounded whatever the command prints (no newline at all,
// carriage returns only, binary, escape sequences, long UTF-8 lines, both
// streams at once) and however large a Write is: the head holds at most
// MaxOutputChars/2 characters, the tail ring the last MaxOutputChars/2 (at
// most 4 bytes each, plus compaction slack), one pending line per stream
// at most outPendingMax bytes (+ one character), and the committed text of
// the chunk being processed at most outCommitMax (+ outPendingMax) bytes
// before it goes to the accumulator (TestOutputCapPendingLineBounded).

// Stream indexes.
const (
	outStdout = 0
	outStderr = 1
)

// outPendingMax is the most bytes of one unterminated line a stream holds
// back (so that a later lone '\r' can still erase it). A longer line is
// committed in pieces; a '\r' after that erases only the uncommitted rest.
const outPendingMax = 64 << 10

// outCommitMax is the most bytes of committed text one chunk collects
// before they go to the accumulator.
const outCommitMax = 64 << 10

// outEscapeMax bounds the bytes of one escape sequence: an OSC or DCS string
// that never terminates stops being swallowed after this many bytes.
const outEscapeMax = 4096

// outPlain marks bytes that are plain text on their own: printable ASCII
// and TAB. Everything else takes the slow path.
var outPlain = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	t['\t'] = true
	return t
}()

// escState is where a stream is inside an escape sequence.
type escState uint8

const (
	escNone         escState = iota
	escStart                 // after ESC
	escCSI                   // ESC [ params intermediates, until a final byte 0x40-0x7E
	escIntermediate          // ESC then 0x20-0x2F bytes, until a final byte 0x30-0x7E
	escString                // OSC, DCS, SOS, PM, APC: until BEL or ESC \
	escStringEsc             // ESC seen inside a string
)

// streamNorm is the per-stream normalization state.
type streamNorm struct {
	esc    escState
	escLen int
	carry  [utf8.UTFMax]byte // an incomplete UTF-8 sequence at the end of a chunk
	ncarry int
	line   []byte // the current line, not yet committed
	cr     bool   // a lone '\r' was seen: the next text replaces the line
	binary bool   // a NUL byte was seen: the rest is counted, not shown
	binAt  int64  // raw byte offset in this stream where binary data began
	// invalid counts the raw bytes that were not UTF-8 and were shown as
	// U+FFFD (BH-097); invalidAt holds the raw offsets of the first
	// invalidAtMax of them.
	invalid   int64
	invalidAt [invalidAtMax]int64
}

// invalidAtMax is how many offsets of invalid UTF-8 bytes a result names.
const invalidAtMax = 5

// badByte notes one invalid byte at raw offset off of the stream.
func (n *streamNorm) badByte(off int64) {
	if n.invalid < invalidAtMax {
		n.invalidAt[n.invalid] = off
	}
	n.invalid++
}

// outputCap receives a command's output and builds its model projection.
// Its writers ([outputCap.writer]) are safe for concurrent use.
type outputCap struct {
	mu     sync.Mutex
	closed bool // finish was called: later writes are discarded

	emit func(tool.Event) // transient client events; may be nil

	headMax, tailMax int // characters

	norm [2]streamNorm
	buf  []byte // committed text of the chunk being processed

	// The accumulator, over the committed (normalized) text.
	head      []byte
	headChars int
	headNL    int64 // newlines in head
	tail      []byte
	tailOff   int // tail[tailOff:] is the live tail
	tailChars int

	chars       int64    // committed characters in all
	newlines    int64    // committed '\n' in all
	lastNL      bool     // the last committed character is '\n'
	evChars     int64    // characters evicted between head and tail
	evNL        int64    // '\n' among them
	evLastNL    bool     // the last evicted character is '\n'
	streamChars [2]int64 // committed characters per stream

	rawBytes [2]int64 // raw bytes received per stream
	binBytes [2]int64 // raw bytes of binary data not shown, per stream

	file        *os.File // full raw output, or nil
	filePath    string
	fileBytes   int64
	fileMax     int64                         // bytes; the file stops growing past it
	fileGrant   func(need, limit int64) int64 // asks the data folder for room; nil: no quota
	fileAllowed int64                         // bytes the data folder granted so far (with fileGrant)
	fileFull    bool                          // stopped at fileMax
	fileQuota   bool                          // stopped: the data folder granted no more room
	fileLines   int64                         // newlines written to the file
	fileErr     error
}

// newOutputCap keeps maxChars characters of projection (half head, half
// tail); emit may be nil.
func newOutputCap(maxChars int, emit func(tool.Event)) *outputCap {
	h := maxChars / 2
	return &outputCap{emit: emit, headMax: h, tailMax: maxChars - h}
}

// keepFile makes the cap append every raw chunk to f, up to max bytes.
// grant, when not nil, is asked for room before the file grows past what
// it granted so far: the file needs need more bytes and may grow by at
// most limit; it returns how many more the file may take. Once it grants
// less than needed the file stops growing (it stays a prefix of the
// output).
func (c *outputCap) keepFile(f *os.File, max int64, grant func(need, limit int64) int64) {
	c.file, c.filePath, c.fileMax, c.fileGrant = f, f.Name(), max, grant
}

// writer returns the io.Writer of one stream (outStdout or outStderr).
func (c *outputCap) writer(stream int) io.Writer {
	return capWriter{c, stream}
}

type capWriter struct {
	c      *outputCap
	stream int
}

func (w capWriter) Write(p []byte) (int, error) {
	w.c.write(w.stream, p)
	return len(p), nil
}

// heartbeat emits a heartbeat event, serialized with the output events.
func (c *outputCap) heartbeat() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.emit != nil {
		c.emit(tool.Event{Kind: tool.EventHeartbeat, Time: time.Now()})
	}
}

func (c *outputCap) write(stream int, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(p) == 0 {
		return
	}
	c.rawBytes[stream] += int64(len(p))
	// The full output file first: what a client was shown is already in
	// the file when it sees it (a process killed right after still leaves
	// it there for view_tool_call).
	c.record(p)
	if c.emit != nil {
		kind := tool.EventStdout
		if stream == outStderr {
			kind = tool.EventStderr
		}
		c.emit(tool.Event{Kind: kind, Data: append([]byte(nil), p...), Time: time.Now()})
	}
	c.feed(stream, p)
}

// record appends p to the full output file while it is within fileMax and
// the room the data folder grants.
func (c *outputCap) record(p []byte) {
	if c.file == nil || c.fileErr != nil || c.fileFull || c.fileQuota {
		return
	}
	end := c.fileBytes + int64(len(p))
	if c.fileGrant != nil && end > c.fileAllowed && c.fileAllowed < c.fileMax {
		c.fileAllowed += c.fileGrant(min(end, c.fileMax)-c.fileAllowed, c.fileMax-c.fileAllowed)
	}
	limit := c.fileMax
	if c.fileGrant != nil && c.fileAllowed < limit {
		limit = c.fileAllowed
	}
	if room := limit - c.fileBytes; int64(len(p)) > room {
		p = p[:max(room, 0)]
		if limit == c.fileMax {
			c.fileFull = true
		} else {
			c.fileQuota = true
		}
	}
	n, err := c.file.Write(p)
	c.fileBytes += int64(n)
	c.fileLines += int64(bytes.Count(p[:n], []byte{'\n'}))
	if err != nil {
		c.fileErr = err
	}
}

// feed normalizes one raw chunk of a stream and commits the complete lines.
func (c *outputCap) feed(stream int, p []byte) {
	n := &c.norm[stream]
	if n.binary {
		c.binBytes[stream] += int64(len(p))
		return
	}
	// Keep arrival order across streams: the other stream's unfinished
	// line arrived before this chunk, so it is committed first.
	if o := &c.norm[1-stream]; len(o.line) > 0 {
		c.commit(1-stream, o.line)
		o.line = o.line[:0]
	}
	out := c.buf[:0]
	i := 0
	if n.ncarry > 0 {
		// Complete the UTF-8 sequence cut at the end of the last chunk.
		var tmp [2 * utf8.UTFMax]byte
		k := copy(tmp[:], n.carry[:n.ncarry])
		k += copy(tmp[k:utf8.UTFMax], p)
		seq := tmp[:k]
		if !utf8.FullRune(seq) {
			n.ncarry = copy(n.carry[:], seq)
			return
		}
		r, size := utf8.DecodeRune(seq)
		had := n.ncarry
		n.ncarry = 0
		if r == utf8.RuneError && size == 1 {
			// An invalid sequence: the lead and each carried continuation
			// byte are one U+FFFD each, as whole-input decoding gives.
			at := c.rawBytes[stream] - int64(len(p)) - int64(had)
			for j := range had {
				out = n.text(out, replacementChar)
				n.badByte(at + int64(j))
			}
		} else {
			if r < 0x80 || r > 0x9f { // C1 controls are dropped
				out = n.text(out, seq[:size])
			}
			i = size - had
		}
	}
	for i < len(p) {
		if len(n.line) >= outPendingMax {
			out = append(out, n.line...)
			n.line = n.line[:0]
		}
		if len(out) >= outCommitMax {
			// A huge chunk from a caller's Write is committed in pieces,
			// so out stays small too.
			c.commit(stream, out)
			out = out[:0]
		}
		if n.esc != escNone {
			i = n.escape(p, i)
			continue
		}
		// At most up to outPendingMax: the pending line is cut at the same
		// byte whatever the chunking (the fuzz test checks it).
		if j := textRun(p[:min(len(p), i+outPendingMax-n.pending())], i); j > i {
			out = n.text(out, p[i:j])
			i = j
		} else {
			out, i = c.slow(stream, n, p, i, out)
		}
	}
	c.commit(stream, out)
	c.buf = out[:0]
}

// pending is the length of the stream's pending line as the next text
// sees it (0 after a lone '\r': that text starts the line over).
func (n *streamNorm) pending() int {
	if n.cr {
		return 0
	}
	return len(n.line)
}

// slow handles the byte at p[i] that is not plain text (a newline, a
// control, an escape, a NUL, or UTF-8) and returns out and where the next
// byte to handle is.
func (c *outputCap) slow(stream int, n *streamNorm, p []byte, i int, out []byte) ([]byte, int) {
	switch b := p[i]; {
	case b == '\n':
		out = append(out, n.line...)
		out = append(out, '\n')
		n.line, n.cr = n.line[:0], false
		i++
	case b == '\r':
		n.cr = true // a lone '\r' unless '\n' follows
		i++
	case b == 0x1b:
		n.esc, n.escLen = escStart, 0
		i++
	case b == 0:
		// Binary data: what came before stays; the rest is counted.
		out = append(out, n.line...)
		n.line, n.cr, n.binary = nil, false, true
		n.binAt = c.rawBytes[stream] - int64(len(p)-i)
		c.binBytes[stream] += int64(len(p) - i)
		i = len(p)
	case b == '\b':
		if !n.cr && len(n.line) > 0 {
			_, size := utf8.DecodeLastRune(n.line)
			n.line = n.line[:len(n.line)-size]
		}
		i++
	case b < 0x80:
		i++ // other C0 controls and DEL: dropped
	default:
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1 && !utf8.FullRune(p[i:]):
			n.ncarry = copy(n.carry[:], p[i:]) // cut by the chunk end
			i = len(p)
		case r == utf8.RuneError && size == 1:
			out = n.text(out, replacementChar) // invalid UTF-8, replaced visibly
			n.badByte(c.rawBytes[stream] - int64(len(p)-i))
			i++
		case r >= 0x80 && r <= 0x9f:
			i += size // C1 controls: dropped
		default:
			out = n.text(out, p[i:i+size])
			i += size
		}
	}
	return out, i
}

var replacementChar = []byte(string(utf8.RuneError))

// text appends visible text to the stream's current line; after a lone
// '\r' the line starts over (BH-027: only text after the last lone '\r'
// of a line is kept).
func (n *streamNorm) text(out, t []byte) []byte {
	if n.cr {
		n.line, n.cr = n.line[:0], false
	}
	n.line = append(n.line, t...)
	return out
}

// escape consumes bytes of an escape sequence from p[i:] and returns where
// normal processing resumes. A malformed sequence ends at the offending
// byte, which is then processed as text.
func (n *streamNorm) escape(p []byte, i int) int {
	for i < len(p) {
		if n.escLen++; n.escLen > outEscapeMax {
			n.esc = escNone
			return i
		}
		b := p[i]
		switch n.esc {
		case escStart:
			switch {
			case b == '[':
				n.esc = escCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				n.esc = escString
			case b >= 0x20 && b <= 0x2f:
				n.esc = escIntermediate
			case b >= 0x30 && b <= 0x7e:
				n.esc = escNone // a two-byte sequence (ESC 7, ESC M, ...)
				return i + 1
			default:
				n.esc = escNone // a lone ESC: drop it
				return i
			}
		case escCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				n.esc = escNone
				return i + 1
			case b < 0x20 || b > 0x7e:
				n.esc = escNone
				return i
			}
		case escIntermediate:
			switch {
			case b >= 0x30 && b <= 0x7e:
				n.esc = escNone
				return i + 1
			case b < 0x20 || b > 0x7e:
				n.esc = escNone
				return i
			}
		case escString:
			switch b {
			case 0x07:
				n.esc = escNone
				return i + 1
			case 0x1b:
				n.esc = escStringEsc
			case '\n':
				n.esc = escNone // unterminated: do not swallow lines
				return i
			}
		case escStringEsc:
			if b == '\\' {
				n.esc = escNone
				return i + 1
			}
			n.esc = escStart // the string ended; this ESC starts a new sequence
			continue
		}
		i++
	}
	return i
}

// commit adds normalized text of a stream to the totals and the
// accumulator. Every character counts against the cap, newlines included
// (so a trailing newline is one character of the tail).
func (c *outputCap) commit(stream int, p []byte) {
	if len(p) == 0 {
		return
	}
	nc := runeCount(p)
	c.chars += int64(nc)
	c.streamChars[stream] += int64(nc)
	c.newlines += int64(bytes.Count(p, []byte{'\n'}))
	c.lastNL = p[len(p)-1] == '\n'
	c.accumulate(p, nc)
}

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// plainRun returns the end of the run of plain bytes (outPlain) that starts
// at p[i], eight bytes at a time where it can.
func plainRun(p []byte, i int) int {
	for i+8 <= len(p) {
		x := binary.LittleEndian.Uint64(p[i:])
		// A byte < 0x20, or a byte >= 0x7f, ends the fast path (TAB
		// included: the byte loop below takes it).
		if (x-0x20*swarOnes)&^x&swarHigh != 0 || (x|(x+swarOnes))&swarHigh != 0 {
			break
		}
		i += 8
	}
	for i < len(p) && outPlain[p[i]] {
		i++
	}
	return i
}

// textRun returns the end of the run of text that needs no change: plain
// bytes (plainRun) and valid UTF-8 characters other than C1 controls. A
// character cut by the end of p ends the run.
func textRun(p []byte, i int) int {
	for {
		i = plainRun(p, i)
		if i == len(p) || p[i] < 0x80 {
			return i
		}
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || r <= 0x9f {
			return i
		}
		i += size
	}
}

// runeCount is utf8.RuneCount for valid UTF-8 (which the normalizer
// produces), with an eight-byte fast path for ASCII.
func runeCount(p []byte) int {
	n, i := 0, 0
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		if x&swarHigh == 0 {
			n += 8
			continue
		}
		for _, b := range p[i : i+8] {
			if b&0xc0 != 0x80 {
				n++
			}
		}
	}
	for _, b := range p[i:] {
		if b&0xc0 != 0x80 {
			n++
		}
	}
	return n
}

// accumulate keeps the first headMax characters and the last tailMax.
func (c *outputCap) accumulate(p []byte, nc int) {
	if len(p) == 0 {
		return
	}
	if c.headChars < c.headMax {
		take := min(c.headMax-c.headChars, nc)
		k := runePrefix(p, take, nc)
		c.head = append(c.head, p[:k]...)
		c.headChars += take
		c.headNL += int64(bytes.Count(p[:k], []byte{'\n'}))
		p, nc = p[k:], nc-take
		if nc == 0 {
			return
		}
	}
	if nc >= c.tailMax {
		// The chunk alone fills the tail: the old tail and the chunk's
		// front are evicted.
		cut := runeSuffix(p, c.tailMax, nc)
		live := c.tail[c.tailOff:]
		c.evChars += int64(c.tailChars + nc - c.tailMax)
		c.evNL += int64(bytes.Count(live, []byte{'\n'}) + bytes.Count(p[:cut], []byte{'\n'}))
		if cut > 0 {
			c.evLastNL = p[cut-1] == '\n'
		} else if len(live) > 0 {
			c.evLastNL = live[len(live)-1] == '\n'
		}
		c.tail = append(c.tail[:0], p[cut:]...)
		c.tailOff, c.tailChars = 0, c.tailMax
		return
	}
	c.tail = append(c.tail, p...)
	c.tailChars += nc
	if excess := c.tailChars - c.tailMax; excess > 0 {
		live := c.tail[c.tailOff:]
		k := runePrefix(live, excess, c.tailChars) // len(live) == tailChars: ASCII
		c.evChars += int64(excess)
		c.evNL += int64(bytes.Count(live[:k], []byte{'\n'}))
		c.evLastNL = live[k-1] == '\n'
		c.tailOff += k
		c.tailChars = c.tailMax
		if c.tailOff > len(c.tail)/2 {
			c.tail = c.tail[:copy(c.tail, c.tail[c.tailOff:])]
			c.tailOff = 0
		}
	}
}

// runePrefix returns the byte length of the first k characters of p; nc is
// p's character count, or -1 when unknown.
func runePrefix(p []byte, k, nc int) int {
	if nc == len(p) {
		return k // ASCII
	}
	i := 0
	for ; k > 0 && i < len(p); k-- {
		_, size := utf8.DecodeRune(p[i:])
		i += size
	}
	return i
}

// runeSuffix returns the byte offset where the last k characters of p
// begin; nc is p's character count.
func runeSuffix(p []byte, k, nc int) int {
	if nc == len(p) {
		return len(p) - k // ASCII
	}
	i := len(p)
	for ; k > 0 && i > 0; k-- {
		_, size := utf8.DecodeLastRune(p[:i])
		i -= size
	}
	return i
}

// finish flushes every stream's pending line and stops accepting writes.
// It is idempotent.
func (c *outputCap) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for s := range c.norm {
		n := &c.norm[s]
		out := c.buf[:0]
		if n.ncarry > 0 {
			// A sequence cut by the end of the output: one U+FFFD.
			out = n.text(out, replacementChar)
			at := c.rawBytes[s] - int64(n.ncarry)
			for j := range n.ncarry {
				n.badByte(at + int64(j))
			}
			n.ncarry = 0
		}
		out = append(out, n.line...) // a lone '\r' at the end erases nothing
		n.line = nil
		c.commit(s, out)
	}
}

// capStats is what the projection says about the output, in characters
// (runes of the normalized text) unless named bytes.
type capStats struct {
	Chars        int64                  // characters produced (normalized text, both streams)
	Lines        int64                  // lines produced (a final line without '\n' counts)
	Shown        int64                  // characters in the projection's head and tail
	OmittedChars int64                  // characters left out between head and tail
	OmittedLines int64                  // lines touched by the omission (0 when none)
	FirstOmitted int64                  // 1-based line of the first omitted character
	LastOmitted  int64                  // 1-based line of the last omitted character
	StderrChars  int64                  // characters that came from stderr
	RawBytes     [2]int64               // bytes received on stdout, stderr
	BinaryBytes  [2]int64               // bytes of binary data not shown, per stream
	BinaryAt     [2]int64               // raw offset where binary data began, per stream
	InvalidBytes [2]int64               // raw bytes not valid UTF-8, shown as U+FFFD, per stream
	InvalidAt    [2][invalidAtMax]int64 // raw offsets of the first of them, per stream
	FilePath     string                 // full output file, "" when none
	FileBytes    int64                  // bytes written to it
	FileFull     bool                   // it stopped at its size limit
	FileQuota    bool                   // it stopped: the data folder had no more room
	FileLines    int64                  // complete lines in it
	FileErr      error                  // writing it failed
}

// projection returns the model's text (head, marker, tail) and the counts.
// Call it after finish.
func (c *outputCap) projection() (string, capStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := capStats{
		Chars:        c.chars,
		Lines:        c.newlines,
		Shown:        int64(c.headChars + c.tailChars),
		OmittedChars: c.evChars,
		StderrChars:  c.streamChars[outStderr],
		RawBytes:     c.rawBytes,
		BinaryBytes:  c.binBytes,
		BinaryAt:     [2]int64{c.norm[0].binAt, c.norm[1].binAt},
		InvalidBytes: [2]int64{c.norm[0].invalid, c.norm[1].invalid},
		InvalidAt:    [2][invalidAtMax]int64{c.norm[0].invalidAt, c.norm[1].invalidAt},
		FilePath:     c.filePath,
		FileBytes:    c.fileBytes,
		FileFull:     c.fileFull,
		FileQuota:    c.fileQuota,
		FileLines:    c.fileLines,
		FileErr:      c.fileErr,
	}
	if c.chars > 0 && !c.lastNL {
		st.Lines++
	}
	var b strings.Builder
	b.Grow(len(c.head) + len(c.tail) - c.tailOff + 64)
	b.Write(c.head)
	if c.evChars > 0 {
		st.FirstOmitted = 1 + c.headNL
		st.LastOmitted = 1 + c.headNL + c.evNL
		if c.evLastNL {
			st.LastOmitted--
		}
		st.OmittedLines = st.LastOmitted - st.FirstOmitted + 1
		if len(c.head) > 0 && c.head[len(c.head)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString(omissionMarker(st))
		b.WriteByte('\n')
	}
	b.Write(c.tail[c.tailOff:])
	// The output's final newline ends the last line; it is not shown.
	return strings.TrimSuffix(b.String(), "\n"), st
}

// omissionMarker is the line that stands for the omitted middle, e.g.
// "[49,940 characters omitted: lines 582-2,446]" (case BH-046): the
// [tool.CutMarker] every cut result uses.
func omissionMarker(st capStats) string {
	return tool.CutMarker(st.OmittedChars, st.FirstOmitted, st.LastOmitted)
}

// exCount formats n with thousands separators (golang.org/x/text/message, English): 65544 -> "65,544".
func exCount(n int64) string { return thousands.Sprintf("%d", n) }

// exPlural returns "1 line" or "2,000 lines".
func exPlural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return exCount(n) + " " + many
}

// dropEmptyFile removes the full output file when the data folder's quota
// left no room for a single byte of a non-empty output: the result then
// names no file. Call it after finish.
func (c *outputCap) dropEmptyFile() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil || !c.fileQuota || c.fileBytes > 0 {
		return
	}
	c.file.Close()
	os.Remove(c.filePath)
	c.file, c.filePath = nil, ""
}
