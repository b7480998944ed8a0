package localsandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/sandbox/sandboxtest"
)

func open(t testing.TB, dir string, opts *localsandbox.Options) *localsandbox.Sandbox {
	t.Helper()
	s, err := localsandbox.New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T, workspace string) sandbox.Sandbox {
		return open(t, workspace, nil)
	})
}

// stopAfter is a context whose Err turns to context.DeadlineExceeded after
// n calls: it stops a walk at a deterministic point, without timing.
type stopAfter struct {
	context.Context
	n atomic.Int64
}

func newStopAfter(n int64) *stopAfter {
	c := &stopAfter{Context: context.Background()}
	c.n.Store(n)
	return c
}

func (c *stopAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BH-018: a deadline mid-walk returns what was found so far, Partial, with
// FilesSearched saying how far the search got; never a bare error.
func TestSearchDeadlineReturnsPartial(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("d%02d/f%04d.js", i%20, i)] = "export const x = 1;\n"
	}
	writeTree(t, ws, files)
	s := open(t, ws, nil)
	for _, n := range []int64{50, 500, 1500} {
		r, err := s.Search(newStopAfter(n), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "export", MaxResults: 5000})
		if err != nil {
			t.Fatalf("stop after %d: error %v, want a partial result", n, err)
		}
		if !r.Partial || r.FilesSearched == 0 || r.FilesSearched >= 2000 || r.Total != r.FilesSearched || len(r.Matches) != r.Total {
			t.Errorf("stop after %d: Partial %v FilesSearched %d Total %d Matches %d", n, r.Partial, r.FilesSearched, r.Total, len(r.Matches))
		}
		// Glob polls ctx per directory and every 256 entries: stop sooner.
		g, err := s.Search(newStopAfter(n/100+4), sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "**/*.js", MaxResults: 5000})
		if err != nil || !g.Partial || len(g.Files) == 0 || len(g.Files) >= 2000 {
			t.Errorf("glob stop after %d: err %v Partial %v files %d", n, err, g.Partial, len(g.Files))
		}
	}
	r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "export"})
	if err != nil || r.Partial || r.Total != 2000 || len(r.Matches) != 100 || !r.Truncated || r.FilesSearched != 2000 {
		t.Errorf("full: err %v Partial %v Total %d Matches %d Truncated %v", err, r.Partial, r.Total, len(r.Matches), r.Truncated)
	}
}

func TestListDeadlineReturnsPartial(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%03d/f.txt", i)] = ""
	}
	writeTree(t, ws, files)
	s := open(t, ws, nil)
	l, err := s.List(newStopAfter(10), sandbox.ListRequest{Depth: 2})
	if err != nil || !l.Partial || len(l.Entries) == 0 || len(l.Entries) >= 600 {
		t.Errorf("err %v Partial %v entries %d", err, l.Partial, len(l.Entries))
	}
}

// BH-014: the 2,000,000-character line is streamed; the read allocates a
// bounded buffer, not the line.
func TestReadHugeLineAllocatesLittle(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"bundle.min.js": strings.Repeat("a;", 1_000_000)})
	s := open(t, ws, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := s.Read(context.Background(), sandbox.ReadRequest{Path: "bundle.min.js"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 512<<10 {
		t.Errorf("Read allocated %d bytes for a 2,000,000-byte line; want < 512 KiB", got)
	}
	if r.Lines[0].Chars != 2_000_000 || len(r.Lines[0].Text) != 2000 {
		t.Errorf("line 1: %d chars, %d shown", r.Lines[0].Chars, len(r.Lines[0].Text))
	}
}

// Lines longer than MaxSearchLineBytes are matched window by window; the
// count and positions stay exact.
func TestGrepLineLongerThanWindow(t *testing.T) {
	ws := t.TempDir()
	line := strings.Repeat("y", 3<<20) + "NEEDLE" + strings.Repeat("z", 10)
	writeTree(t, ws, map[string]string{"big.txt": "first\n" + line + "\nlast NEEDLE\n"})
	s := open(t, ws, &localsandbox.Options{MaxSearchLineBytes: 64 << 10})
	r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "NEEDLE", MaxLineChars: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 2 || len(r.Matches) != 2 {
		t.Fatalf("Total %d, matches %+v", r.Total, r.Matches)
	}
	m := r.Matches[0]
	if m.Line != 2 || m.Chars != len(line) || m.TextStart != 3<<20-7 || m.Text != "yyyyyyyNEEDLEzzzzzzz" {
		t.Errorf("long line match: Line %d Chars %d TextStart %d Text %q", m.Line, m.Chars, m.TextStart, m.Text)
	}
	if r.Matches[1].Line != 3 || r.Matches[1].Text != "last NEEDLE" {
		t.Errorf("after the long line: %+v", r.Matches[1])
	}
}

// A write stopped at any point leaves the old file and no temporary file.
func TestWriteStoppedAnywhereLeavesNoTrace(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"f.txt": "old\n"})
	s := open(t, ws, nil)
	for n := int64(0); n < 12; n++ {
		_, err := s.Write(newStopAfter(n), sandbox.WriteRequest{Path: "f.txt", Content: []byte("new\n")})
		b, _ := os.ReadFile(filepath.Join(ws, "f.txt"))
		switch {
		case err == nil:
			if string(b) != "new\n" {
				t.Errorf("n=%d: success but file holds %q", n, b)
			}
			writeTree(t, ws, map[string]string{"f.txt": "old\n"})
		case errors.Is(err, context.DeadlineExceeded):
			if string(b) != "old\n" {
				t.Errorf("n=%d: stopped write changed the file to %q", n, b)
			}
		default:
			t.Errorf("n=%d: %v", n, err)
		}
		ents, _ := os.ReadDir(ws)
		if len(ents) != 1 {
			t.Errorf("n=%d: workspace holds %d entries (temporary file left?)", n, len(ents))
		}
	}
}

// The workspace may be given through a symlink; absolute paths under either
// spelling are inside.
func TestWorkspaceBehindSymlink(t *testing.T) {
	real := t.TempDir()
	writeTree(t, real, map[string]string{"a.txt": "x\n"})
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symlinks: %v", err)
	}
	s := open(t, link, nil)
	for _, p := range []string{filepath.Join(link, "a.txt"), filepath.Join(s.Workspace(), "a.txt")} {
		if _, err := s.Read(context.Background(), sandbox.ReadRequest{Path: p}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestSymlinkLoopInPathFails(t *testing.T) {
	ws := t.TempDir()
	if err := os.Symlink("b", filepath.Join(ws, "a")); err != nil {
		t.Skip(err)
	}
	os.Symlink("a", filepath.Join(ws, "b"))
	s := open(t, ws, nil)
	_, err := s.Read(context.Background(), sandbox.ReadRequest{Path: "a"})
	var pe *sandbox.PathError
	if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "too many levels") {
		t.Errorf("err = %v, want a too-many-links PathError", err)
	}
}

func BenchmarkSearchBH018(b *testing.B) {
	ws := b.TempDir()
	files := map[string]string{}
	for i := range 20 {
		svc := fmt.Sprintf("svc-%02d", i)
		files[svc+"/src/lib/uri.js"] = "export const uri = 1;\n"
		files[svc+"/.gitignore"] = "node_modules/\n"
		for j := range 2000 {
			files[fmt.Sprintf("%s/node_modules/p%02d/f%04d.js", svc, j%50, j)] = "export default 0;\n"
		}
	}
	writeTree(b, ws, files)
	s := open(b, ws, nil)
	b.Run("glob", func(b *testing.B) {
		for b.Loop() {
			r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "*/src/lib/uri.js"})
			if err != nil || r.Total != 20 {
				b.Fatal(err, r.Total)
			}
		}
	})
	b.Run("grep", func(b *testing.B) {
		for b.Loop() {
			r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "export"})
			if err != nil || r.Total != 20 {
				b.Fatal(err, r.Total)
			}
		}
	})
	b.Run("grep-no-ignore", func(b *testing.B) {
		for b.Loop() {
			r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "export", NoIgnore: true})
			if err != nil || r.Total != 40020 {
				b.Fatal(err, r.Total)
			}
		}
	})
}

func BenchmarkReadHugeLine(b *testing.B) {
	ws := b.TempDir()
	writeTree(b, ws, map[string]string{"bundle.min.js": strings.Repeat("a;", 1_000_000)})
	s := open(b, ws, nil)
	b.SetBytes(2_000_000)
	for b.Loop() {
		if _, err := s.Read(context.Background(), sandbox.ReadRequest{Path: "bundle.min.js"}); err != nil {
			b.Fatal(err)
		}
	}
}
