package tool_test

import (
	"fmt"
	"testing"

	"github.com/aibuddy/aibuddy/tool"
)

// A middle cut and a window, rendered and read back.
func ExampleCut() {
	middle := tool.Cut{
		By: "execute", Bound: "the 30,000-character output cap",
		TotalChars: 79940, TotalLines: 3001, HeadChars: 15000, TailChars: 15000,
		OmittedChars: 49940, OmittedFirst: 582, OmittedLast: 2446,
		Next: `recover them with view_tool_call {"id":"c1","lines":"582-2446"}`,
	}
	fmt.Println(middle.Notice())
	fmt.Println(tool.CutMarker(49940, 582, 2446))
	window := tool.Cut{
		By: "read_file", Bound: "the 30,000-character result bound", File: true,
		TotalLines: 2000, ShownFirst: 1, ShownLast: 342, OmittedFirst: 343, OmittedLast: 2000,
		Next: `continue with read_file {"path":"notes.md","offset":343}`,
	}
	fmt.Println(window.Notice())
	p, ok := tool.ParseCut(window.Notice())
	fmt.Printf("%v %q %q\n", ok, p.Shown, p.Omitted)
	// Output:
	// [cut by execute at the 30,000-character output cap: 79,940 characters in 3,001 lines produced; 30,000 characters shown (first 15,000 and last 15,000); 49,940 characters omitted (lines 582-2,446); recover them with view_tool_call {"id":"c1","lines":"582-2446"}]
	// [49,940 characters omitted: lines 582-2,446]
	// [cut by read_file at the 30,000-character result bound: the file has 2,000 lines; lines 1-342 shown; lines 343-2,000 omitted; continue with read_file {"path":"notes.md","offset":343}]
	// true "lines 1-342" "lines 343-2,000"
}

func TestCutNoticeShapesParse(t *testing.T) {
	for _, tc := range []struct {
		c    tool.Cut
		want string
	}{
		{tool.Cut{By: "read_file", Bound: "the 262,144-byte bound per call", File: true, TotalLines: -1,
			ShownFirst: 5001, ShownLast: 5001, OmittedFirst: 5002, Next: "continue with read_file {}"},
			"[cut by read_file at the 262,144-byte bound per call: the file has more than 5,001 lines; line 5,001 shown; lines 5,002 to the end omitted; continue with read_file {}]"},
		{tool.Cut{By: "aibuddy", Bound: "the 60-character result bound", TotalChars: 61, TotalLines: -1,
			HeadChars: 30, TailChars: 30, OmittedChars: 1, OmittedFirst: 1, OmittedLast: 1,
			Next: "they cannot be recovered: run it again; narrower"},
			"[cut by aibuddy at the 60-character result bound: 61 characters produced; 60 characters shown (first 30 and last 30); 1 character omitted (line 1); they cannot be recovered: run it again; narrower]"},
	} {
		got := tc.c.Notice()
		if got != tc.want {
			t.Errorf("Notice\n got %s\nwant %s", got, tc.want)
		}
		p, ok := tool.ParseCut(got)
		if !ok || p.By != tc.c.By || p.Bound != tc.c.Bound || p.Next != tc.c.Next {
			t.Errorf("ParseCut(%s) = %+v, %v", got, p, ok)
		}
	}
	for _, s := range []string{"", "[49,940 characters omitted: lines 582-2,446]", "exit code: 0", "[cut by x]"} {
		if _, ok := tool.ParseCut(s); ok {
			t.Errorf("ParseCut(%q) accepted a line that is not a notice", s)
		}
	}
}
