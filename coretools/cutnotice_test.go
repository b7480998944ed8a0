package coretools

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/tool"
)

// Issue 10, item 2 (case BH-047): the three ways a result gets cut (shell
// output by execute, any result by the result bound, a read_file window)
// say so in one format: the result's first line is a tool.Cut notice that
// tool.ParseCut reads, naming who cut, at which bound, the totals, what is
// shown, what is omitted and the call that gets the rest; where the
// middle is left out, the gap holds the tool.CutMarker line.
func TestCutNoticeOneFormatForExecuteBoundAndReadFile(t *testing.T) {
	marker := regexp.MustCompile(`(?m)^\[[0-9,]+ characters? omitted: lines? [0-9,]+(-[0-9,]+)?\]$`)

	// execute: 80,000 characters of output, cut to 30,000.
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: t.TempDir()})
	execRes, _ := r.call(context.Background(), map[string]any{"command": `python3 -c "[print('row %05d' % i) for i in range(8000)]"`})

	// The result bound: an MCP tool's 1,200,000 characters.
	var big strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&big, "%0999d\n", i)
	}
	boundRes := result.Bound(tool.Text(big.String()), "mcp_1", result.DefaultMaxModelChars, true)

	// read_file: 2,000 lines of 80 characters stop at the result bound.
	w := newFSWorld(t, nil)
	var file strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&file, "%05d:%s\n", i, strings.Repeat("x", 74))
	}
	w.file(t, "notes.md", file.String())
	readRes := w.call(t, "read_file", map[string]any{"path": "notes.md"})

	for _, tc := range []struct {
		res        *tool.Result
		by, bound  string
		next       string // the recovery call the notice names
		middleDrop bool   // the middle is omitted: a marker stands in the gap
	}{
		{execRes, "execute", "the 30,000-character output cap", `recover them with view_tool_call {"id":"`, true},
		{boundRes, "aibuddy", "the 30,000-character result bound", `recover them with view_tool_call {"toolCallId":"mcp_1","part":"result","lines":"16-1185"}`, true},
		{readRes, "read_file", "the 30,000-character result bound", `continue with read_file {"path":"notes.md","offset":`, false},
	} {
		t.Run(tc.by, func(t *testing.T) {
			text := tc.res.AllText()
			first, rest, _ := strings.Cut(text, "\n")
			p, ok := tool.ParseCut(first)
			if !ok {
				t.Fatalf("first line is not a cut notice:\n%s", first)
			}
			if p.By != tc.by || p.Bound != tc.bound || !strings.HasPrefix(p.Next, tc.next) {
				t.Errorf("notice parts %+v, want by %q at %q, next %q…", p, tc.by, tc.bound, tc.next)
			}
			if !strings.Contains(p.Shown, "30,000 characters") && !strings.HasPrefix(p.Shown, "lines 1-") || p.Omitted == "" || p.Total == "" {
				t.Errorf("notice parts %+v", p)
			}
			if got := len(marker.FindAllString(rest, -1)); tc.middleDrop != (got == 1) {
				t.Errorf("%d gap markers in the text; middle omitted = %v", got, tc.middleDrop)
			}
			if strings.Count(text, "[cut by ") != map[bool]int{true: 1, false: 2}[tc.middleDrop] {
				t.Errorf("notice count: %d", strings.Count(text, "[cut by "))
			}
		})
	}
}
