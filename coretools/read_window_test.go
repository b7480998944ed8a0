package coretools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/tool"
)

// readWhole reads rel from line 1 to the end with successive read_file
// calls, each starting at the offset the previous result names. It fails
// the test when a result would be cut by the result bound (maxChars, as
// result.Bound applies it), when a line is shown twice or out of order,
// when a cut window's notice is not its first and last line, or when the
// notice's read_file call does not continue at the line after the last one
// shown. It
// returns the lines seen by number and the number of calls.
func readWhole(t *testing.T, w *fsWorld, rel string, maxChars int) (map[int]string, int) {
	t.Helper()
	lineRE := regexp.MustCompile(`^ *(\d+)→(.*)$`)
	seen := map[int]string{}
	offset, calls := 1, 0
	for {
		calls++
		if calls > 10000 {
			t.Fatal("no end after 10,000 calls")
		}
		res := w.call(t, "read_file", map[string]any{"path": rel, "offset": offset})
		text := fsMustOK(t, res)
		if b := result.Bound(res, "t1", maxChars, true); b != res {
			t.Fatalf("call %d (offset %d): the result bound cut the read (%d characters):\n%s", calls, offset, fsRunes(text), b.AllText()[:300])
		}
		last := 0
		for _, l := range strings.Split(text, "\n") {
			m := lineRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if _, dup := seen[n]; dup {
				t.Fatalf("call %d: line %d shown again", calls, n)
			}
			if n != offset && last == 0 || last > 0 && n != last+1 {
				t.Fatalf("call %d (offset %d): line %d follows line %d", calls, offset, n, last)
			}
			seen[n], last = m[2], n
		}
		if last == 0 {
			t.Fatalf("call %d (offset %d) showed no line:\n%s", calls, offset, text)
		}
		first, _, _ := strings.Cut(text, "\n")
		cut, ok := tool.ParseCut(first)
		if !ok {
			if strings.Contains(text, "[cut by") {
				t.Fatalf("call %d: a notice that is not the first line:\n%s", calls, text)
			}
			return seen, calls
		}
		if !strings.HasSuffix(text, "\n"+first) {
			t.Fatalf("call %d: the cut notice is not also the last line:\n%s", calls, text[max(0, len(text)-400):])
		}
		args, ok := strings.CutPrefix(cut.Next, "continue with read_file ")
		var in struct {
			Path   string
			Offset int
		}
		if err := json.Unmarshal([]byte(args), &in); !ok || err != nil || in.Path != rel {
			t.Fatalf("call %d: the notice's next step %q is not a read_file call on %s (%v)", calls, cut.Next, rel, err)
		}
		next := in.Offset
		if next != last+1 {
			t.Fatalf("call %d: last line shown is %d but the result says to continue at offset=%d", calls, last, next)
		}
		offset = next
	}
}

// Issue 10, item 1: read_file's window is decided by one limit, whichever
// of lines, bytes and the result's character bound comes first, so that
// reading a file by following the continuation offset sees every line
// exactly once and the result bound never cuts a read in its middle.
func TestReadFileFollowingOffsetsSeesEveryLineOnceUncut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *FSOptions
		lines int
		line  func(i int) string
		cut   bool // lines are cut: read_file shows a prefix of each
	}{
		{name: "2,000 lines of 80 characters", lines: 2000,
			line: func(i int) string { return fmt.Sprintf("%05d:%s", i, strings.Repeat("x", 74)) }},
		{name: "2,000 lines of 40 CJK characters (120 bytes)", lines: 2000,
			line: func(i int) string { return fmt.Sprintf("%05d:%s", i, strings.Repeat("漢", 34)) }},
		{name: "resultMaxChars 5,000", opts: &FSOptions{MaxOutputChars: 5000}, lines: 2000,
			line: func(i int) string { return fmt.Sprintf("%05d:%s", i, strings.Repeat("y", 74)) }},
		{name: "long lines cut to 2,000 characters", lines: 200,
			line: func(i int) string { return fmt.Sprintf("%05d:%s", i, strings.Repeat("z", 2994)) }, cut: true},
		{name: "one line passes the result bound", opts: &FSOptions{MaxOutputChars: 1000}, lines: 20,
			line: func(i int) string { return fmt.Sprintf("%05d:%s", i, strings.Repeat("w", 1494)) }, cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFSWorld(t, tc.opts)
			var b strings.Builder
			for i := 1; i <= tc.lines; i++ {
				b.WriteString(tc.line(i))
				b.WriteByte('\n')
			}
			w.file(t, "f.txt", b.String())
			maxChars := result.DefaultMaxModelChars
			if tc.opts != nil && tc.opts.MaxOutputChars > 0 {
				maxChars = tc.opts.MaxOutputChars
			}
			seen, calls := readWhole(t, w, "f.txt", maxChars)
			if calls < 2 {
				t.Errorf("read in %d call; the case should need several", calls)
			}
			for i := 1; i <= tc.lines; i++ {
				got, ok := seen[i]
				want := tc.line(i)
				switch {
				case !ok:
					t.Fatalf("line %d never shown", i)
				case !tc.cut && got != want:
					t.Fatalf("line %d = %q, want %q", i, got, want)
				case tc.cut && (!strings.HasPrefix(want, got) || len(got) == 0):
					t.Fatalf("line %d = %q, not a prefix of the line", i, got)
				}
			}
			if len(seen) != tc.lines {
				t.Errorf("%d lines seen, the file has %d", len(seen), tc.lines)
			}
			t.Logf("%d lines in %d calls", tc.lines, calls)
		})
	}
}
