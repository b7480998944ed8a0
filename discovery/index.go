package discovery

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aibuddy/aibuddy/tool"
)

// IndexEntry is what the deferred index keeps of one deferred tool (seed:
// "Deferred entries retain only names and descriptions in the index"): its
// name, its description, and the names of its top-level parameters as
// search terms. The full input schema is not kept here; it reaches the
// model only through tool_search, from the tool itself.
type IndexEntry struct {
	Name        string
	Description string
	Params      []string // top-level property names of the input schema, sorted
}

// The fields of a document, each with its own weight and length
// normalisation (BM25F).
const (
	fName   = iota // words of the tool name
	fDesc          // words of the description
	fParam         // words of the parameter names
	fBigram        // adjacent word pairs of the name
	nFields
)

// rankParams are the ranking constants. They were chosen on the Seal-Tools
// dev set (see bench/toolsearch); nothing in the ranker is specific to it.
type rankParams struct {
	K1 float64          // BM25 term-frequency saturation
	B  [nFields]float64 // length normalisation per field (0 = none, 1 = full)
	W  [nFields]float64 // weight of a field's term frequency
	// SegmentWeight is how much the best single-sentence score counts
	// beside the whole-query score, for queries of several sentences.
	SegmentWeight float64
	// SegmentTop is the extra boost (× the whole query's best score) for
	// the best tool of each sentence.
	SegmentTop float64
}

// defaultRank was chosen by a coarse coordinate search on the Seal-Tools
// dev set (recall@5 + recall@10/2), checked to hold on both halves of it.
// The name's words weigh little on their own because descriptions repeat
// them; the name's word pairs carry the name's signal.
func defaultRank() rankParams {
	return rankParams{
		K1:            1.2,
		B:             [nFields]float64{1, 1, 0.75, 0.5},
		W:             [nFields]float64{0.5, 1, 1, 0.5},
		SegmentWeight: 0.75,
		SegmentTop:    0.5,
	}
}

type posting struct {
	doc int32
	w   float32 // idf × saturated BM25F term frequency, precomputed
}

// index is a BM25F inverted index over the deferred tools. It is built once
// and read-only afterwards; Search is safe for concurrent use.
type index struct {
	entries []IndexEntry
	an      *analyzer
	post    map[string][]posting
	byName  map[string]int // exact name -> doc
	byLower map[string]int // lower-case name -> doc, when unique
	p       rankParams
	scratch sync.Pool // *scoreBuf
}

type scoreBuf struct {
	acc        []float64 // whole-query score per doc
	seg        []float64 // one sentence's score per doc
	in         []bool    // doc is in touched
	segIn      []bool    // doc is in segTouched
	touched    []int32
	segTouched []int32
}

// paramNames returns the top-level property names of a tool's input
// schema, sorted (JSON objects have no order that survives decoding). The
// property schemas themselves are scanned, not decoded.
func paramNames(t *tool.Tool) []string {
	var s struct {
		Properties map[string]skipJSON `json:"properties"`
	}
	if err := json.Unmarshal(t.InputSchema(), &s); err != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// skipJSON is any JSON value, left undecoded.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

func newIndex(entries []IndexEntry, p rankParams) *index {
	ix := &index{
		entries: entries,
		an:      newAnalyzer(),
		post:    map[string][]posting{},
		byName:  make(map[string]int, len(entries)),
		byLower: make(map[string]int, len(entries)),
		p:       p,
	}
	n := len(entries)
	// Term frequencies per field and field lengths: one entry per (term,
	// doc), in first-seen order, found through a map of the current
	// document's terms only.
	type tfEntry struct {
		term string
		doc  int32
		c    [nFields]float64
	}
	var order []tfEntry
	df := map[string]int{}
	local := map[string]int{} // term -> position in order, this doc
	lens := make([][nFields]float64, n)
	var total [nFields]float64
	dupLower := map[string]bool{}
	for d, e := range entries {
		ix.byName[e.Name] = d
		low := strings.ToLower(e.Name)
		if _, seen := ix.byLower[low]; seen {
			dupLower[low] = true
		}
		ix.byLower[low] = d
		var fields [nFields][]string
		fields[fName] = ix.an.terms(e.Name, nil)
		fields[fDesc] = ix.an.terms(e.Description, nil)
		for _, pn := range e.Params {
			fields[fParam] = ix.an.terms(pn, fields[fParam])
		}
		fields[fBigram] = bigrams(fields[fName])
		clear(local)
		for f := range nFields {
			lens[d][f] = float64(len(fields[f]))
			total[f] += lens[d][f]
			for _, t := range fields[f] {
				i, ok := local[t]
				if !ok {
					i = len(order)
					local[t] = i
					order = append(order, tfEntry{term: t, doc: int32(d)})
					df[t]++
				}
				order[i].c[f]++
			}
		}
	}
	for low := range dupLower {
		delete(ix.byLower, low)
	}
	ix.an.frozen = true
	var avg [nFields]float64
	for f := range nFields {
		avg[f] = 1
		if n > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(n)
		}
	}
	for _, k := range order {
		c := k.c
		var pseudo float64
		for f := range nFields {
			if c[f] == 0 {
				continue
			}
			norm := 1 - p.B[f] + p.B[f]*lens[k.doc][f]/avg[f]
			pseudo += p.W[f] * c[f] / norm
		}
		idf := math.Log(1 + (float64(n)-float64(df[k.term])+0.5)/(float64(df[k.term])+0.5))
		w := idf * pseudo * (p.K1 + 1) / (p.K1 + pseudo)
		ix.post[k.term] = append(ix.post[k.term], posting{doc: k.doc, w: float32(w)})
	}
	ix.scratch.New = func() any {
		return &scoreBuf{acc: make([]float64, n), seg: make([]float64, n), in: make([]bool, n), segIn: make([]bool, n)}
	}
	return ix
}

// bigrams returns the adjacent pairs of terms, joined by a space (which no
// term contains).
func bigrams(terms []string) []string {
	if len(terms) < 2 {
		return nil
	}
	out := make([]string, 0, len(terms)-1)
	for i := 1; i < len(terms); i++ {
		out = append(out, terms[i-1]+" "+terms[i])
	}
	return out
}

// queryTerms analyses one sentence of a query: its terms and the bigrams
// of adjacent terms, each once, appended to out.
func (ix *index) queryTerms(q string, out []string) []string {
	terms := ix.an.terms(q, nil)
	first := len(out)
	add := func(t string) {
		if !slices.Contains(out[first:], t) {
			out = append(out, t)
		}
	}
	for _, t := range terms {
		add(t)
	}
	for i := 1; i < len(terms); i++ {
		add(terms[i-1] + " " + terms[i])
	}
	return out
}

// score adds the BM25F score of terms into acc, recording new docs in
// touched.
func (ix *index) score(terms []string, acc []float64, in []bool, touched []int32) []int32 {
	for _, t := range terms {
		for _, p := range ix.post[t] {
			if !in[p.doc] {
				in[p.doc] = true
				touched = append(touched, p.doc)
			}
			acc[p.doc] += float64(p.w)
		}
	}
	return touched
}

// Hit is one search result: a deferred tool's name and its score (higher is
// better; only the order within one answer means anything).
type Hit struct {
	Name  string
	Score float64
}

// maxQuery bounds the work of one search: only the first 8 KiB of a query
// are read.
const maxQuery = 8 << 10

// search returns the k best deferred tools for a natural-language query,
// best first; ties break by name. A query that is exactly a tool's name
// (case-insensitive) puts that tool first. Tools with no matching term are
// never returned.
func (ix *index) search(query string, k int) []Hit {
	if k <= 0 || len(ix.entries) == 0 {
		return nil
	}
	if len(query) > maxQuery {
		query = query[:maxQuery]
	}
	buf := ix.scratch.Get().(*scoreBuf)
	defer func() {
		for _, d := range buf.touched {
			buf.acc[d] = 0
			buf.in[d] = false
		}
		buf.touched = buf.touched[:0]
		ix.scratch.Put(buf)
	}()

	segs := segments(query)
	per := make([][]string, 0, len(segs))
	var whole []string
	for _, sg := range segs {
		st := ix.queryTerms(sg, nil)
		per = append(per, st)
		for _, t := range st {
			if !slices.Contains(whole, t) {
				whole = append(whole, t)
			}
		}
	}
	buf.touched = ix.score(whole, buf.acc, buf.in, buf.touched)
	if len(per) > 1 && ix.p.SegmentWeight > 0 {
		// A query that asks for several things: each sentence is also
		// scored on its own, and its tools get a boost relative to that
		// sentence's best, so the tool of one short sentence is not
		// drowned by the words of a longer one.
		var top float64
		for _, d := range buf.touched {
			top = math.Max(top, buf.acc[d])
		}
		for _, st := range per {
			if len(st) > 0 {
				ix.segmentBoost(st, buf, top)
			}
		}
	}

	if d, ok := ix.exact(query); ok {
		// The query is a tool's name: that tool comes first.
		var best float64
		for _, t := range buf.touched {
			best = math.Max(best, buf.acc[t])
		}
		if !buf.in[d] {
			buf.in[d] = true
			buf.touched = append(buf.touched, int32(d))
		}
		buf.acc[d] = best + 1
	}
	// Top k by partial insertion: k is small, the touched set is not.
	top := make([]Hit, 0, k+1)
	for _, d := range buf.touched {
		s := buf.acc[d]
		if s <= 0 {
			continue
		}
		if len(top) == k && !better(s, ix.entries[d].Name, top[k-1]) {
			continue
		}
		h := Hit{Name: ix.entries[d].Name, Score: s}
		i := len(top)
		top = append(top, h)
		for i > 0 && better(h.Score, h.Name, top[i-1]) {
			top[i] = top[i-1]
			i--
		}
		top[i] = h
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// better reports whether (score, name) ranks before h: higher score first,
// then name order, so equal scores come out the same way every time.
func better(score float64, name string, h Hit) bool {
	if score != h.Score {
		return score > h.Score
	}
	return name < h.Name
}

// segmentBoost scores one sentence on its own and adds, to each tool it
// matches, SegmentWeight × top × (its sentence score / the sentence's
// best)², where top is the whole query's best score.
func (ix *index) segmentBoost(terms []string, buf *scoreBuf, top float64) {
	buf.segTouched = ix.score(terms, buf.seg, buf.segIn, buf.segTouched[:0])
	var best float64
	for _, d := range buf.segTouched {
		best = math.Max(best, buf.seg[d])
	}
	for _, d := range buf.segTouched {
		if best > 0 {
			r := buf.seg[d] / best
			if !buf.in[d] {
				buf.in[d] = true
				buf.touched = append(buf.touched, d)
			}
			buf.acc[d] += ix.p.SegmentWeight * top * r * r
			if r == 1 {
				buf.acc[d] += ix.p.SegmentTop * top
			}
		}
		buf.seg[d] = 0
		buf.segIn[d] = false
	}
}

// exact finds a tool whose name is the whole query (trimmed), exactly or
// case-insensitively.
func (ix *index) exact(query string) (int, bool) {
	q := strings.TrimSpace(query)
	if d, ok := ix.byName[q]; ok {
		return d, true
	}
	d, ok := ix.byLower[strings.ToLower(q)]
	return d, ok
}
