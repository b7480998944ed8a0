package coretools

// Tests of grep, glob and ls over the real local adapter that the search
// helper owns (issue 10): full counts in the evidence, explicitly named
// hidden segments, skip notes, and escaped names.

import (
	"fmt"
	"testing"
)

// TestSearchEvidenceTotal: grep and glob report the full count of what
// matched in their evidence ("total"), beyond the results shown, so a
// caller (and bench/search) can compare it with another tool's count.
func TestSearchEvidenceTotal(t *testing.T) {
	w := newFSWorld(t, nil)
	for i := range 7 {
		w.file(t, fmt.Sprintf("d/f%d.txt", i), "hit\nhit\nmiss\n")
	}
	r := w.call(t, "grep", map[string]any{"pattern": "hit", "max_results": 3})
	fsMustOK(t, r)
	if r.Evidence["total"] != 14 || r.Evidence["matches"] != 3 {
		t.Errorf("grep evidence = %v; want total 14, matches 3", r.Evidence)
	}
	r = w.call(t, "glob", map[string]any{"pattern": "**/*.txt", "max_results": 2})
	fsMustOK(t, r)
	if r.Evidence["total"] != 7 || r.Evidence["files"] != 2 {
		t.Errorf("glob evidence = %v; want total 7, files 2", r.Evidence)
	}
}
