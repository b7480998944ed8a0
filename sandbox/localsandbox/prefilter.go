package localsandbox

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// grep's literal prefilter. From the parsed regular expression it derives
// needles, short sequences of rune sets, such that every match of the
// expression contains at least one needle: "context.Context" under
// ignore_case is one needle of 15 sets ({c,C}, {o,O}, ...), `foo|bar` two,
// `func \w+\(ctx` the better of "func " and "(ctx". Unicode case folding
// is the regexp's own (unicode.SimpleFold orbits: {k, K, U+212A KELVIN
// SIGN}, {s, S, U+017F LONG S}). A file is then searched for the rarest
// element of a needle (each of its bytes by bytes.IndexByte, the way
// ripgrep searches a rare byte with memchr), the needle is checked around
// each hit, and only a line holding a needle is matched against the
// regular expression, line by line as before; so results are exactly the
// regular expression's. An expression with no needle (".*", `\w+`) has no
// prefilter and is matched as before.

// Bounds of the extraction; they keep a needle short and its checks cheap
// whatever the pattern.
const (
	maxSetRunes    = 24 // a character class of more runes is no needle element
	maxNeedleRunes = 32 // elements kept per needle (a window around its rarest)
	maxExactRunes  = 256
	maxNeedles     = 16 // alternatives of one prefilter (byByte is a uint16 mask)
	maxStreams     = 3  // anchor bytes searched with IndexByte; more use a table scan
)

// runeSet is a small set of runes: ASCII in a bitmap, the rest listed.
type runeSet struct {
	ascii  [2]uint64
	others []rune // sorted
}

func (s *runeSet) has(r rune) bool {
	if r < utf8.RuneSelf {
		return s.ascii[r>>6]&(1<<(r&63)) != 0
	}
	for _, o := range s.others {
		if o == r {
			return true
		}
	}
	return false
}

func (s *runeSet) add(r rune) {
	if r < utf8.RuneSelf {
		s.ascii[r>>6] |= 1 << (r & 63)
		return
	}
	if !slices.Contains(s.others, r) {
		s.others = append(s.others, r)
		slices.Sort(s.others)
	}
}

// each calls f for every rune of the set.
func (s *runeSet) each(f func(rune)) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if s.has(r) {
			f(r)
		}
	}
	for _, r := range s.others {
		f(r)
	}
}

// firstBytes returns the distinct first bytes of the set's runes in UTF-8.
func (s *runeSet) firstBytes() []byte {
	var out []byte
	var buf [utf8.UTFMax]byte
	s.each(func(r rune) {
		utf8.EncodeRune(buf[:], r)
		if !slices.Contains(out, buf[0]) {
			out = append(out, buf[0])
		}
	})
	return out
}

// cost is how often the set's first bytes occur in typical text (parts per
// million of bytes, from byteFreq).
func (s *runeSet) cost() int {
	c := 0
	for _, b := range s.firstBytes() {
		c += int(byteFreq[b])
	}
	return c
}

// seq is a needle's elements in order.
type seq []*runeSet

// anchor returns the index of the element searched for first (the least
// frequent) and its cost.
func (q seq) anchor() (int, int) {
	best, bestCost := 0, -1
	for i, s := range q {
		if c := s.cost(); bestCost < 0 || c < bestCost {
			best, bestCost = i, c
		}
	}
	return best, bestCost
}

// window keeps at most maxNeedleRunes elements of q around its anchor.
func (q seq) window() seq {
	if len(q) <= maxNeedleRunes {
		return q
	}
	a, _ := q.anchor()
	start := max(0, min(a-maxNeedleRunes/2, len(q)-maxNeedleRunes))
	return q[start : start+maxNeedleRunes]
}

// needlesCost estimates the candidates a set of alternative needles yields:
// the sum of their anchors' costs, weighted up for needles of one or two
// elements (their hits are more often not matches).
func needlesCost(alts []seq) int {
	total := 0
	for _, q := range alts {
		_, c := q.anchor()
		switch len(q) {
		case 1:
			c *= 4
		case 2:
			c *= 2
		}
		total += c + 1
	}
	return total
}

// better returns the cheaper of two needle sets; nil is no set.
func better(a, b []seq) []seq {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case needlesCost(b) < needlesCost(a):
		return b
	}
	return a
}

// litInfo is what the extraction knows about a subexpression: exact (every
// match is a sequence of runes from exactSeq), pre and suf (every match
// starts or ends with them), req (every match contains one of these
// alternatives; nil: nothing known).
type litInfo struct {
	exact    bool
	exactSeq seq
	pre, suf seq
	req      []seq
}

// reqOf is the required needles of i.
func reqOf(i litInfo) []seq {
	if i.exact {
		if len(i.exactSeq) == 0 {
			return nil
		}
		return []seq{i.exactSeq.window()}
	}
	return i.req
}

var (
	anyInfo   = litInfo{}            // a match may be anything
	emptyInfo = litInfo{exact: true} // a match is empty
)

// element is the info of one rune position matching set. A line never
// holds '\n', so it is dropped from the set; a set that may match an
// invalid byte (U+FFFD, which the regexp matches there) or that is empty
// then is no needle element.
func element(set *runeSet) litInfo {
	set.ascii[0] &^= 1 << '\n'
	if set.has(utf8.RuneError) || (set.ascii == [2]uint64{} && len(set.others) == 0) {
		return anyInfo
	}
	return litInfo{exact: true, exactSeq: seq{set}}
}

func analyze(re *syntax.Regexp) litInfo {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return emptyInfo
	case syntax.OpLiteral:
		parts := make([]litInfo, len(re.Rune))
		for i, r := range re.Rune {
			set := &runeSet{}
			set.add(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					set.add(f)
				}
			}
			parts[i] = element(set)
		}
		return concat(parts)
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxSetRunes {
				return anyInfo
			}
		}
		set := &runeSet{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				set.add(r)
			}
		}
		return element(set)
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpPlus:
		return atLeastOnce(analyze(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return atLeastOnce(analyze(re.Sub[0]))
		}
		return anyInfo
	case syntax.OpConcat:
		parts := make([]litInfo, len(re.Sub))
		for i, s := range re.Sub {
			parts[i] = analyze(s)
		}
		return concat(parts)
	case syntax.OpAlternate:
		var alts []seq
		for _, s := range re.Sub {
			r := reqOf(analyze(s))
			if r == nil {
				return anyInfo
			}
			alts = append(alts, r...)
			if len(alts) > maxNeedles {
				return anyInfo
			}
		}
		return litInfo{req: alts}
	}
	// OpAnyChar, OpAnyCharNotNL, OpStar, OpQuest, OpNoMatch.
	return anyInfo
}

// atLeastOnce is the info of x+ from x's.
func atLeastOnce(i litInfo) litInfo {
	if i.exact {
		return litInfo{pre: i.exactSeq, suf: i.exactSeq, req: reqOf(i)}
	}
	return litInfo{pre: i.pre, suf: i.suf, req: i.req}
}

// concat is the info of parts matched one after the other: runs of exact
// parts join into needles, with the suffix of the part before and the
// prefix of the part after.
func concat(parts []litInfo) litInfo {
	var (
		cur     seq
		best    []seq
		out     litInfo
		inexact bool
	)
	for _, p := range parts {
		if p.exact {
			cur = append(slices.Clip(cur), p.exactSeq...)
			continue
		}
		run := append(slices.Clip(cur), p.pre...)
		if !inexact {
			out.pre = run
			if len(out.pre) > maxExactRunes {
				out.pre = out.pre[:maxExactRunes]
			}
			inexact = true
		}
		if len(run) > 0 {
			best = better(best, []seq{run.window()})
		}
		best = better(best, p.req)
		cur = p.suf
	}
	if !inexact {
		if len(cur) <= maxExactRunes {
			return litInfo{exact: true, exactSeq: cur}
		}
		return litInfo{pre: cur[:maxExactRunes], suf: cur[len(cur)-maxExactRunes:], req: []seq{cur.window()}}
	}
	if len(cur) > 0 {
		best = better(best, []seq{cur.window()})
	}
	out.suf = cur
	if len(out.suf) > maxExactRunes {
		out.suf = out.suf[len(out.suf)-maxExactRunes:]
	}
	out.req = best
	return out
}

// needle is one sequence the prefilter looks for, and where it anchors.
type needle struct {
	sets   seq
	anchor int // index of the element searched for first
	// ascii holds the sets' ASCII bitmaps when no set holds a non-ASCII
	// rune: the needle is then len(ascii) bytes, compared byte by byte.
	ascii [][2]uint64
}

// at reports whether n occurs in buf with its anchor rune starting at byte
// p. Runes are decoded as the regexp decodes them (an invalid byte is
// U+FFFD, which no element holds).
func (n *needle) at(buf []byte, p int) bool {
	if n.ascii != nil {
		// An ASCII byte is a whole rune wherever it is; a byte of a
		// multi-byte rune is never ASCII, so it matches no set here.
		start := p - n.anchor
		if start < 0 || start+len(n.ascii) > len(buf) {
			return false
		}
		for i, m := range n.ascii {
			c := buf[start+i]
			if c >= utf8.RuneSelf || m[c>>6]&(1<<(c&63)) == 0 {
				return false
			}
		}
		return true
	}
	r, w := decodeAt(buf, p)
	if !n.sets[n.anchor].has(r) {
		return false
	}
	q := p + w
	for _, s := range n.sets[n.anchor+1:] {
		if q >= len(buf) {
			return false
		}
		r, w := decodeAt(buf, q)
		if !s.has(r) {
			return false
		}
		q += w
	}
	q = p
	for i := n.anchor - 1; i >= 0; i-- {
		if q <= 0 {
			return false
		}
		var r rune
		w := 1
		if c := buf[q-1]; c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, w = utf8.DecodeLastRune(buf[:q])
		}
		if !n.sets[i].has(r) {
			return false
		}
		q -= w
	}
	return true
}

func decodeAt(buf []byte, p int) (rune, int) {
	if c := buf[p]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRune(buf[p:])
}

// prefilter finds the lines that may match a regular expression: those
// holding one of its needles.
type prefilter struct {
	needles  []needle
	streams  []byte // the anchors' distinct first bytes, when at most maxStreams
	table    [256]bool
	useTable bool
	byByte   [256]uint16 // needles (bit i: needles[i]) whose anchor starts with the byte

}

// newPrefilter returns the prefilter of expr (RE2 syntax, as
// regexp.Compile takes it), or nil when expr has no needle.
func newPrefilter(expr string) *prefilter {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	alts := reqOf(analyze(re.Simplify()))
	if len(alts) == 0 || len(alts) > maxNeedles {
		return nil
	}
	p := &prefilter{}
	var first []byte
	for i, q := range alts {
		a, _ := q.anchor()
		n := needle{sets: q, anchor: a}
		for _, set := range q {
			if len(set.others) > 0 {
				n.ascii = nil
				break
			}
			n.ascii = append(n.ascii, set.ascii)
		}
		p.needles = append(p.needles, n)
		for _, b := range q[a].firstBytes() {
			p.byByte[b] |= 1 << i
			p.table[b] = true
			if !slices.Contains(first, b) {
				first = append(first, b)
			}
		}
	}
	if len(first) > maxStreams {
		p.useTable = true
	} else {
		p.streams = first
	}
	return p
}

// verify reports whether a needle has its anchor at byte p of buf.
func (p *prefilter) verify(buf []byte, i int) bool {
	for m, k := p.byByte[buf[i]], 0; m != 0; m, k = m>>1, k+1 {
		if m&1 != 0 && p.needles[k].at(buf, i) {
			return true
		}
	}
	return false
}

// contains reports whether buf holds a needle.
func (p *prefilter) contains(buf []byte) bool {
	s := pfScan{p: p, buf: buf}
	s.reset()
	return s.next(0) >= 0
}

// pfScan walks one buffer for needles, remembering where each anchor byte
// occurs next so that no byte is searched twice for the same anchor.
type pfScan struct {
	p   *prefilter
	buf []byte
	pos [maxStreams]int // next index of streams[i] in buf; -1 none left; -2 not searched yet
}

func (s *pfScan) reset() {
	for i := range s.pos {
		s.pos[i] = -2
	}
}

// next returns the index of the anchor byte of the first needle found at or
// after from, or -1.
func (s *pfScan) next(from int) int {
	p, buf := s.p, s.buf
	if p.useTable {
		for i := from; i < len(buf); i++ {
			if p.table[buf[i]] && p.verify(buf, i) {
				return i
			}
		}
		return -1
	}
	for from < len(buf) {
		best := -1
		for i, b := range p.streams {
			at := s.pos[i]
			if at != -1 && at < from {
				at = bytes.IndexByte(buf[from:], b)
				if at >= 0 {
					at += from
				}
				s.pos[i] = at
			}
			if at >= 0 && (best < 0 || at < best) {
				best = at
			}
		}
		if best < 0 {
			return -1
		}
		if p.verify(buf, best) {
			return best
		}
		from = best + 1
	}
	return -1
}

// byteFreq is how often each byte occurs in typical text, in parts per
// million (at least 1): measured once over the Go tree's sources and the
// JavaScript, TypeScript and Markdown files of a node_modules folder,
// weighted equally. Only the order matters: it picks the rarest element of
// a needle to search for.
var byteFreq = [256]uint32{
	1, 1, 1, 1, 1, 1, 1, 1, 1, 20317, 27600, 1, 1, 114, 1, 1, // 0x00
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, // 0x10
	167349, 1123, 11791, 548, 1082, 542, 1146, 2593, 11440, 11431, 3930, 1148, 18439, 3574, 15277, 10984, // 0x20
	18095, 9267, 6883, 4946, 5019, 3589, 4481, 2929, 3961, 3171, 9883, 4594, 1271, 8996, 1554, 865, // 0x30
	398, 4419, 2347, 4423, 3195, 4980, 2596, 1284, 1329, 4164, 368, 694, 2951, 2925, 2903, 3843, // 0x40
	3633, 510, 4406, 6131, 5298, 1773, 2133, 1063, 1041, 727, 912, 2782, 1858, 2777, 196, 5695, // 0x50
	1717, 33826, 8093, 20811, 18280, 60116, 14127, 9531, 11538, 32182, 1344, 4148, 20569, 11967, 35080, 32074, // 0x60
	14978, 1035, 37881, 31371, 46184, 16737, 6272, 4236, 12186, 7301, 1517, 6194, 1943, 6178, 41, 1, // 0x70
	184, 75, 96, 90, 48, 56, 51, 70, 66, 38, 43, 39, 60, 108, 33, 140, // 0x80
	47, 59, 45, 40, 78, 70, 44, 43, 52, 99, 52, 39, 52, 44, 76, 263, // 0x90
	38, 52, 32, 40, 82, 46, 52, 76, 55, 50, 58, 32, 35, 39, 74, 55, // 0xa0
	77, 60, 63, 46, 51, 63, 34, 139, 141, 71, 49, 65, 70, 79, 76, 62, // 0xb0
	1, 1, 139, 87, 24, 16, 1, 1, 1, 4, 1, 2, 6, 1, 34, 11, // 0xc0
	231, 95, 1, 1, 1, 29, 7, 63, 99, 76, 9, 22, 1, 1, 1, 1, // 0xd0
	204, 119, 232, 37, 24, 130, 129, 111, 104, 86, 7, 26, 30, 11, 1, 50, // 0xe0
	233, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, // 0xf0
}
