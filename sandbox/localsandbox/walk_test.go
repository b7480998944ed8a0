package localsandbox_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
)

// The walk runs directories in parallel: sibling directories' .gitignore
// rules never leak into each other, and results (hidden directories
// included) come out the same on every run, in walk order.
func TestSearchParallelWalkDeterministic(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{".gitignore": "*.log\n"}
	for i := range 40 {
		d := fmt.Sprintf("d%02d", i)
		// Each directory ignores its own name's file only.
		files[d+"/.gitignore"] = fmt.Sprintf("only%02d.txt\n", i)
		for j := range 40 {
			if j == i {
				continue
			}
			files[fmt.Sprintf("%s/only%02d.txt", d, j)] = "needle\n"
		}
		files[fmt.Sprintf("%s/only%02d.txt", d, i)] = "needle\n"
		files[d+"/sub/x.log"] = "needle\n"
		files[d+"/sub/deeper/y.txt"] = "needle\n"
	}
	files["a/b/.h/x.txt"] = "needle\n"
	files["a/b-c/.h/x.txt"] = "needle\n"
	files["a/.h/x.txt"] = "needle\n"
	writeTree(t, ws, files)
	s := open(t, ws, nil)

	wantHidden := []string{"a/.h", "a/b/.h", "a/b-c/.h"}
	var firstGlob, firstGrep *sandbox.SearchResult
	for run := range 20 {
		g, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGlob, Pattern: "**/*.txt", MaxResults: 100000})
		if err != nil {
			t.Fatal(err)
		}
		// 40 dirs x 39 kept files + 40 deeper/y.txt.
		if g.Total != 40*39+40 || g.Ignored != 40+40 || g.Partial {
			t.Fatalf("run %d: Total %d Ignored %d Partial %v", run, g.Total, g.Ignored, g.Partial)
		}
		if !slices.Equal(g.SkippedHidden, wantHidden) {
			t.Fatalf("run %d: SkippedHidden %q, want %q", run, g.SkippedHidden, wantHidden)
		}
		r, err := s.Search(context.Background(), sandbox.SearchRequest{Mode: sandbox.ModeGrep, Pattern: "needle", MaxResults: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if r.Total != 40*39+40 || r.FilesSearched != r.Total {
			t.Fatalf("run %d: grep Total %d FilesSearched %d", run, r.Total, r.FilesSearched)
		}
		if run == 0 {
			firstGlob, firstGrep = g, r
			continue
		}
		if !reflect.DeepEqual(g, firstGlob) || !reflect.DeepEqual(r, firstGrep) {
			t.Fatalf("run %d: results differ from run 0", run)
		}
	}
}
