package localsandbox

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// This file decides how a text file's bytes become the text Read shows and
// Edit matches (issue 10: a GBK file was called "binary (text/plain;
// charset=utf-8)" and its edit echo showed U+FFFD with a false "long line
// cut" note). The encodings are golang.org/x/text's; only the choice among
// them is made here, from the first sniffBytes bytes, in this order:
//
//  1. a byte order mark: UTF-8, UTF-16LE, UTF-16BE;
//  2. UTF-16 without one, by its NUL bytes (one in two, on the same side);
//  3. UTF-8, when the bytes are valid UTF-8 or hold more valid multi-byte
//     characters than invalid bytes (those few are shown as \xNN);
//  4. an East Asian multi-byte encoding (GB18030/GBK, Big5, Shift_JIS,
//     EUC-JP, EUC-KR) that decodes the bytes with (almost) no invalid
//     sequence and whose text holds enough of its language's most common
//     characters (the most frequent hanzi, kana or hangul syllables; a
//     wrong decoding yields rare ones), the best of them;
//  5. windows-1252 (ISO-8859-1 when a byte is undefined in 1252) for text
//     whose non-ASCII bytes are sparse and stand alone, as accented letters
//     in Western European text do;
//  6. otherwise an unrecognized 8-bit encoding, shown as UTF-8 with every
//     other byte as \xNN, unless the bytes hold almost no ASCII whitespace
//     (then they are binary).
//
// NUL bytes (outside UTF-16) and control characters make a file binary
// whatever the rest says.

// Encodings named in ReadResult.Encoding, besides those of textEncodings.
const (
	encUTF8        = "utf-8"
	encUTF8Invalid = `utf-8 (bytes that are not valid UTF-8 shown as \xNN)`
	encUnknown     = `unknown (not UTF-8; bytes that are not ASCII shown as \xNN)`
)

// textEncoding is how a text file's bytes map to text.
type textEncoding struct {
	name string            // ReadResult.Encoding: "utf-8", "gb18030", "utf-16le", ...
	enc  encoding.Encoding // nil: UTF-8 as is, invalid bytes shown as \xNN
	// unknown: no encoding was recognized; shown like UTF-8.
	unknown bool
}

// decodable reports whether the text is a conversion (Edit matches in the
// decoded text and encodes the result back).
func (te textEncoding) decodable() bool { return te.enc != nil }

// reader returns the file's text as UTF-8: decoded, or for UTF-8 and
// unknown encodings the bytes as they are with a UTF-8 byte order mark
// dropped and every byte that is not valid UTF-8 written as \xNN (counted
// in esc, which may be nil).
//
// For UTF-16, esc counts instead the bytes the decoder shows as U+FFFD
// (BH-097 (c)): each unpaired surrogate's two bytes and an odd final byte.
func (te textEncoding) reader(r io.Reader, esc *int64) io.Reader {
	if te.enc != nil {
		switch te.name {
		case "utf-16le":
			return transform.NewReader(r, transform.Chain(&utf16Check{big: false, n: esc}, te.enc.NewDecoder()))
		case "utf-16be":
			return transform.NewReader(r, transform.Chain(&utf16Check{big: true, n: esc}, te.enc.NewDecoder()))
		}
		return transform.NewReader(r, te.enc.NewDecoder())
	}
	return transform.NewReader(&bomSkipper{r: r}, &escapeInvalid{n: esc})
}

// decode converts a whole file; ok is false when encoding the text again
// does not give the same bytes (then an edit could not keep the bytes it
// does not change, and Edit works on the bytes instead).
func (te textEncoding) decode(b []byte) (text []byte, ok bool) {
	if te.enc == nil {
		return nil, false
	}
	text, err := te.enc.NewDecoder().Bytes(b)
	if err != nil {
		return nil, false
	}
	back, err := te.enc.NewEncoder().Bytes(text)
	if err != nil || !bytes.Equal(back, b) {
		return nil, false
	}
	return text, true
}

// encode converts text back to the file's encoding. A character the
// encoding cannot hold is named in the error.
func (te textEncoding) encode(text []byte) ([]byte, error) {
	out, err := te.enc.NewEncoder().Bytes(text)
	if err == nil {
		return out, nil
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		if _, e := te.enc.NewEncoder().Bytes(text[i : i+size]); e != nil {
			return nil, fmt.Errorf("%s cannot hold %q (U+%04X)", te.display(), r, r)
		}
		i += size
	}
	return nil, fmt.Errorf("%s cannot hold the new text: %v", te.display(), err)
}

// display names the encoding for messages: "GB18030 (GBK)".
func (te textEncoding) display() string {
	for _, c := range textEncodings {
		if c.name == te.name {
			return c.display
		}
	}
	return strings.ToUpper(te.name)
}

// textEncodings are the conversions sniffEncoding may choose, with their
// display names.
var textEncodings = []struct {
	name, display string
	enc           encoding.Encoding
}{
	{"gb18030", "GB18030 (GBK)", simplifiedchinese.GB18030},
	{"big5", "Big5", traditionalchinese.Big5},
	{"shift_jis", "Shift_JIS", japanese.ShiftJIS},
	{"euc-jp", "EUC-JP", japanese.EUCJP},
	{"euc-kr", "EUC-KR", korean.EUCKR},
	{"windows-1252", "windows-1252 (Latin-1)", charmap.Windows1252},
	{"iso-8859-1", "ISO-8859-1 (Latin-1)", charmap.ISO8859_1},
	{"utf-16le", "UTF-16LE", unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)},
	{"utf-16be", "UTF-16BE", unicode.UTF16(unicode.BigEndian, unicode.UseBOM)},
}

func namedEncoding(name string) textEncoding {
	for _, c := range textEncodings {
		if c.name == name {
			return textEncoding{name: c.name, enc: c.enc}
		}
	}
	panic("localsandbox: unknown encoding " + name)
}

// Common characters of each language: the most frequent in running text.
// A right decoding of a page of text yields many of them; a wrong one
// yields rare characters.
const (
	commonHans   = "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心她本前开但因只从想实日，。、；：？！“”（）《》"
	commonHant   = "的一是不了在人有我他這個們中來上大為和國地到以說時要就出會可也你對生能而子那得於著下自之年過發後作裡用道行所然家種事成方多經麼去法學如都同現當沒動面起看定天分還進好小部其些主樣理心她本前開但因只從想實日，。、；：？！「」（）《》"
	commonHangul = "이다는의에가고하를지서기도로한을사어리자대수나아정일시인그으해니우것요내주보라들만전원부면상제게여구생습있었없않같됩되했할합니까데또말더위알잘"
)

// commonKana counts Japanese kana and the Japanese full stops and quotes.
func commonKana(r rune) bool {
	return r >= 0x3041 && r <= 0x30FF || strings.ContainsRune("、。「」", r)
}

// multiByteCandidates are the East Asian encodings sniffEncoding tries,
// with the test of a common character in their language.
var multiByteCandidates = []struct {
	name   string
	common func(rune) bool
}{
	{"gb18030", func(r rune) bool { return strings.ContainsRune(commonHans, r) }},
	{"big5", func(r rune) bool { return strings.ContainsRune(commonHant, r) }},
	{"shift_jis", commonKana},
	{"euc-jp", commonKana},
	{"euc-kr", func(r rune) bool { return strings.ContainsRune(commonHangul, r) }},
}

// Thresholds of sniffEncoding.
const (
	minCommonShare   = 0.15 // of a decoding's non-ASCII characters that are common in its language
	maxInvalidShare  = 0.01 // of a decoding's non-ASCII characters that are invalid sequences
	maxLatin1Share   = 0.30 // of the bytes that are non-ASCII, for windows-1252
	maxLatin1Run     = 2.0  // mean length of runs of non-ASCII bytes, for windows-1252
	minTextSpace     = 0.01 // of the bytes that are ASCII whitespace, for an unrecognized encoding
	maxControlShare  = 0.10 // of the characters that are control characters, for any text
	minUTF16NULShare = 0.40 // of the bytes on one side that are NUL, for UTF-16 without a BOM
)

// sniffEncoding chooses how to read a file from its first bytes (see the
// top of this file). truncated says the file continues past head, so an
// incomplete character at its end is not an error.
func sniffEncoding(head []byte, truncated bool) (te textEncoding, binary bool) {
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}) && !bytes.HasPrefix(head, []byte{0xFF, 0xFE, 0, 0}):
		return namedEncoding("utf-16le"), false
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		return namedEncoding("utf-16be"), false
	}
	if len(head) == 0 {
		return textEncoding{name: encUTF8}, false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		if order, name := utf16ByNULs(head); name != "" {
			te := textEncoding{name: name, enc: unicode.UTF16(order, unicode.IgnoreBOM)}
			if text, err := te.enc.NewDecoder().Bytes(head[:len(head)&^1]); err == nil && !tooManyControls(text) &&
				bytes.Count(text, []byte("\uFFFD")) == 0 {
				return te, false
			}
		}
		return textEncoding{}, true
	}
	if truncated {
		// Drop an incomplete UTF-8 character at the cut.
		for i := 1; i <= utf8.UTFMax && i <= len(head); i++ {
			if utf8.RuneStart(head[len(head)-i]) {
				if !utf8.FullRune(head[len(head)-i:]) {
					head = head[:len(head)-i]
				}
				break
			}
		}
	}
	if tooManyControls(head) {
		return textEncoding{}, true
	}
	valid, invalid := 0, 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			invalid++
		case size > 1:
			valid++
		}
		i += size
	}
	if invalid == 0 || valid >= invalid {
		if invalid > 0 {
			return textEncoding{name: encUTF8Invalid}, false
		}
		return textEncoding{name: encUTF8}, false
	}

	best, bestScore := "", 0.0
	for _, c := range multiByteCandidates {
		enc := namedEncoding(c.name).enc
		text, err := enc.NewDecoder().Bytes(head)
		if err != nil {
			continue
		}
		nonASCII, bad, common := 0, 0, 0
		for _, r := range string(text) {
			switch {
			case r < 0x80:
			case r == utf8.RuneError:
				nonASCII++
				bad++
			default:
				nonASCII++
				if c.common(r) {
					common++
				}
			}
		}
		if nonASCII == 0 || float64(bad) > maxInvalidShare*float64(nonASCII)+1 {
			continue
		}
		if s := float64(common) / float64(nonASCII); s >= minCommonShare && s > bestScore {
			best, bestScore = c.name, s
		}
	}
	if best != "" {
		return namedEncoding(best), false
	}

	high, runs, space := 0, 0, 0
	undefined1252 := false
	for i, b := range head {
		switch {
		case b >= 0x80:
			high++
			if i == 0 || head[i-1] < 0x80 {
				runs++
			}
			switch b {
			case 0x81, 0x8D, 0x8F, 0x90, 0x9D:
				undefined1252 = true
			}
		case b == ' ' || b == '\n' || b == '\t' || b == '\r':
			space++
		}
	}
	if float64(high) <= maxLatin1Share*float64(len(head)) && float64(high) <= maxLatin1Run*float64(runs) {
		if undefined1252 {
			return namedEncoding("iso-8859-1"), false
		}
		return namedEncoding("windows-1252"), false
	}
	if float64(space) < minTextSpace*float64(len(head)) {
		return textEncoding{}, true
	}
	return textEncoding{name: encUnknown, unknown: true}, false
}

// utf16ByNULs names the UTF-16 byte order whose NUL bytes fall on one side
// (ASCII text in UTF-16), or "".
func utf16ByNULs(head []byte) (unicode.Endianness, string) {
	var nul [2]int
	for i, b := range head {
		if b == 0 {
			nul[i%2]++
		}
	}
	half := float64(len(head)) / 2
	switch {
	case float64(nul[1]) >= minUTF16NULShare*half && nul[0] == 0:
		return unicode.LittleEndian, "utf-16le"
	case float64(nul[0]) >= minUTF16NULShare*half && nul[1] == 0:
		return unicode.BigEndian, "utf-16be"
	}
	return unicode.LittleEndian, ""
}

// tooManyControls reports whether text (UTF-8 or bytes) holds more control
// characters than text does: NUL-free binary data.
func tooManyControls(text []byte) bool {
	control := 0
	for _, c := range text {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1B {
			control++
		}
	}
	return float64(control) > maxControlShare*float64(len(text))
}

// escapeInvalid is a transform.Transformer that copies valid UTF-8 and
// writes each byte that is not as `\xNN` (upper-case hex), so that the
// text is valid UTF-8 and its characters can be counted and cut safely.
// n, when set, counts the bytes escaped.
type escapeInvalid struct {
	n *int64
}

const hexDigits = "0123456789ABCDEF"

func (e *escapeInvalid) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		c := src[nSrc]
		if c < utf8.RuneSelf {
			if nDst >= len(dst) {
				return nDst, nSrc, transform.ErrShortDst
			}
			dst[nDst] = c
			nDst++
			nSrc++
			continue
		}
		if !atEOF && !utf8.FullRune(src[nSrc:]) {
			return nDst, nSrc, transform.ErrShortSrc // a character cut by the chunk
		}
		r, size := utf8.DecodeRune(src[nSrc:])
		if r == utf8.RuneError && size == 1 {
			if nDst+4 > len(dst) {
				return nDst, nSrc, transform.ErrShortDst
			}
			dst[nDst], dst[nDst+1], dst[nDst+2], dst[nDst+3] = '\\', 'x', hexDigits[c>>4], hexDigits[c&0xF]
			nDst += 4
			nSrc++
			if e.n != nil {
				*e.n++
			}
			continue
		}
		if nDst+size > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		copy(dst[nDst:], src[nSrc:nSrc+size])
		nDst += size
		nSrc += size
	}
	return nDst, nSrc, nil
}

func (e *escapeInvalid) Reset() {}

// unescapeHigh turns each `\xNN` with NN from 80 to FF (the form Read
// shows for bytes that are not valid UTF-8) back into that byte; ok is
// false when s holds none.
func unescapeHigh(s string) (out string, ok bool) {
	if !strings.Contains(s, `\x`) {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			hi, lo := strings.IndexByte(hexDigits, s[i+2]), strings.IndexByte(hexDigits, s[i+3])
			if hi >= 8 && lo >= 0 {
				b.WriteByte(byte(hi<<4 | lo))
				i += 3
				ok = true
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), ok
}

// utf16Check is a transform.Transformer that passes UTF-16 bytes through
// unchanged and counts, in n (when set), the bytes the decoder will show
// as U+FFFD: the two bytes of a surrogate without its pair, and a final
// odd byte.
type utf16Check struct {
	big  bool // big-endian
	n    *int64
	high bool // the last unit passed was a high surrogate
}

func (u *utf16Check) bad(k int64) {
	if u.n != nil {
		*u.n += k
	}
}

func (u *utf16Check) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc+2 <= len(src) {
		if nDst+2 > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		unit := uint16(src[nSrc])<<8 | uint16(src[nSrc+1])
		if !u.big {
			unit = uint16(src[nSrc+1])<<8 | uint16(src[nSrc])
		}
		switch {
		case unit >= 0xD800 && unit < 0xDC00: // high
			if u.high {
				u.bad(2)
			}
			u.high = true
		case unit >= 0xDC00 && unit < 0xE000: // low
			if !u.high {
				u.bad(2)
			}
			u.high = false
		default:
			if u.high {
				u.bad(2)
			}
			u.high = false
		}
		dst[nDst], dst[nDst+1] = src[nSrc], src[nSrc+1]
		nDst += 2
		nSrc += 2
	}
	if nSrc < len(src) { // one byte left
		if !atEOF {
			return nDst, nSrc, transform.ErrShortSrc
		}
		if nDst >= len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		dst[nDst] = src[nSrc]
		nDst++
		nSrc++
		u.bad(1)
	}
	if atEOF && u.high {
		u.bad(2)
		u.high = false
	}
	return nDst, nSrc, nil
}

func (u *utf16Check) Reset() { u.high = false }
