package compact

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"unicode/utf8"
)

// This file reads a viewed source (a full output file of any size, or a
// text in memory) in bounded memory: every pass reads chunks of
// scanChunk bytes through an io.ReaderAt, so one view_tool_call holds at
// most a few chunks, one line of up to lineMax bytes (pattern), and the
// slice it returns, whatever the size of the source.
//
// Characters are counted as Go decodes a string: a valid UTF-8 sequence is
// one character, every byte of an invalid one is one character (shown as
// U+FFFD). A chunk that ends inside a sequence carries its last bytes to
// the next chunk, so the counts and slices equal those of the whole text
// decoded at once.

// scanChunk is the bytes one read of a pass takes.
const scanChunk = 256 << 10

// lineMax is the longest line, in bytes, a pattern search holds in memory;
// a longer line is matched as a stream and cut from the file.
const lineMax = 1 << 20

// incompleteTail is the number of bytes at the end of p that start a UTF-8
// sequence the next bytes may complete (0 to 3).
func incompleteTail(p []byte) int {
	for i := max(0, len(p)-(utf8.UTFMax-1)); i < len(p); i++ {
		if utf8.RuneStart(p[i]) && !utf8.FullRune(p[i:]) {
			return len(p) - i
		}
	}
	return 0
}

// runeCount is utf8.RuneCount without its allocation (Go 1.26 converts
// the non-ASCII rest to a string): ASCII 8 bytes at a time, then Go's
// decoding, so an invalid byte counts as one character.
func runeCount(p []byte) int {
	n, i := 0, 0
	for i < len(p) {
		for i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:])&0x8080808080808080 == 0 {
			i += 8
			n += 8
		}
		if i >= len(p) {
			break
		}
		if p[i] < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRune(p[i:])
			i += w
		}
		n++
	}
	return n
}

// scanText calls fn with the bytes of r[0:size] in order, in segments that
// each decode alone exactly as they decode within the whole text, until fn
// returns false.
func scanText(r io.ReaderAt, size int64, fn func(seg []byte) bool) error {
	if size <= 0 {
		return nil
	}
	buf := make([]byte, min(int64(scanChunk), size)+utf8.UTFMax)
	carry := 0
	for pos := int64(0); pos < size; {
		n := int(min(int64(len(buf)-carry), size-pos))
		m, err := r.ReadAt(buf[carry:carry+n], pos)
		if m < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		pos += int64(n)
		data := buf[:carry+n]
		keep := 0
		if pos < size {
			keep = incompleteTail(data)
		}
		if !fn(data[:len(data)-keep]) {
			return nil
		}
		carry = copy(buf, data[len(data)-keep:])
	}
	return nil
}

// textStats are the totals of a text: characters (as decoded), lines (the
// pieces ending in '\n', plus a last piece without one).
type textStats struct {
	chars    int
	newlines int
	lastNL   bool
	bytes    int64
}

func (s *textStats) add(seg []byte, chars int) {
	if len(seg) == 0 {
		return
	}
	s.chars += chars
	s.newlines += bytes.Count(seg, []byte{'\n'})
	s.lastNL = seg[len(seg)-1] == '\n'
	s.bytes += int64(len(seg))
}

func (s textStats) lines() int {
	if s.bytes == 0 {
		return 0
	}
	if s.lastNL {
		return s.newlines
	}
	return s.newlines + 1
}

// sliceText returns the totals of r[0:size] and its characters
// off..off+n (fewer at the end) as runes, in one pass.
func sliceText(r io.ReaderAt, size int64, off, n int) (textStats, []rune, error) {
	var st textStats
	var out []rune
	end := off + n
	err := scanText(r, size, func(seg []byte) bool {
		c := runeCount(seg)
		if st.chars+c > off && st.chars < end {
			i := st.chars
			for p := seg; len(p) > 0 && i < end; i++ {
				ch, w := utf8.DecodeRune(p)
				if i >= off {
					out = append(out, ch)
				}
				p = p[w:]
			}
		}
		st.add(seg, c)
		return true
	})
	return st, out, err
}

// lineWindow finds lines first..last (1-based, inclusive; last clamped to
// the number of lines) of r[0:size] and returns their byte range; lo == hi
// when first > last. It reads only up to the end of line last.
func lineWindow(r io.ReaderAt, size int64, first, last int) (lo, hi int64, clamped int, err error) {
	first = max(first, 1)
	line, lineStart := 1, int64(0)
	if last < 1 {
		return 0, 0, last, nil
	}
	pos := int64(0)
	found := false
	lo = -1
	if first == 1 {
		lo = 0
	}
	err = scanText(r, size, func(seg []byte) bool {
		for p := seg; ; {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				break
			}
			nl := pos + int64(len(seg)-len(p)+i)
			if line == last {
				hi, found = nl+1, true
				return false
			}
			line++
			lineStart = nl + 1
			if line == first {
				lo = lineStart
			}
			p = p[i+1:]
		}
		pos += int64(len(seg))
		return true
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if found {
		if first > last {
			return 0, 0, last, nil
		}
		return lo, hi, last, nil
	}
	n := line // lines seen; the last one may be empty (the text ends in '\n')
	if lineStart == size {
		n--
	}
	last = min(last, n)
	if first > last {
		return 0, 0, last, nil
	}
	return lo, size, last, nil
}

// eachLine calls fn for every line of r[0:size] with its 1-based number
// and its text without the trailing "\r\n" characters (strings.TrimRight
// "\r\n"). A line of up to lineMax bytes comes as text (long is nil);
// a longer one as a section of r (text is nil) with its character count.
// chars is the line's character count, newline included.
func eachLine(r io.ReaderAt, size int64, fn func(no int, text []byte, long *io.SectionReader, trimmedChars, chars int) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), lineMax)
	pos := int64(0)
	for no := 1; pos < size; no++ {
		l, err := br.ReadSlice('\n')
		if err == nil || (errors.Is(err, io.EOF) && len(l) > 0) {
			pos += int64(len(l))
			t := bytes.TrimRight(l, "\r\n")
			tc := runeCount(t)
			if ferr := fn(no, t, nil, tc, tc+len(l)-len(t)); ferr != nil {
				return ferr
			}
			continue
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		// A long line: consume it, noting where its trailing "\r\n" run starts.
		start := pos
		trail := 0 // trailing '\r' and '\n' bytes
		for {
			pos += int64(len(l))
			if k := len(bytes.TrimRight(l, "\r\n")); k == 0 {
				trail += len(l)
			} else {
				trail = len(l) - k
			}
			if len(l) == 0 {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
			l, err = br.ReadSlice('\n')
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
				return err
			}
		}
		whole := pos - start
		sec := io.NewSectionReader(r, start, whole-int64(trail))
		var st textStats
		if err := scanText(sec, sec.Size(), func(seg []byte) bool { st.add(seg, runeCount(seg)); return true }); err != nil {
			return err
		}
		if ferr := fn(no, nil, sec, st.chars, st.chars+trail); ferr != nil {
			return ferr
		}
	}
	return nil
}

// runeStartBefore returns the largest i <= at with r[i] a rune start byte
// (0 when there is none), reading backwards in blocks.
func runeStartBefore(r io.ReaderAt, at int64) (int64, error) {
	const block = 4096
	for hi := at + 1; hi > 0; {
		lo := max(0, hi-block)
		b := make([]byte, hi-lo)
		if _, err := r.ReadAt(b, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if utf8.RuneStart(b[i]) {
				return lo + int64(i), nil
			}
		}
		hi = lo
	}
	return 0, nil
}
