package coretools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// The filesystem group: six tools over one sandbox, reads marked read-only,
// writes marked destructive.
func ExampleFilesystem() {
	dir, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(dir)
	sb, _ := localsandbox.New(dir, nil)
	defer sb.Close()

	for _, t := range coretools.Filesystem(sb, nil) {
		a := t.Annotations()
		fmt.Printf("%-10s read-only=%v destructive=%v\n", t.Name(), a.ReadOnlyHint, a.DestructiveHint != nil && *a.DestructiveHint)
	}
	// Output:
	// ls         read-only=true destructive=false
	// read_file  read-only=true destructive=false
	// write_file read-only=false destructive=true
	// edit_file  read-only=false destructive=true
	// glob       read-only=true destructive=false
	// grep       read-only=true destructive=false
}

// Read a tab-indented file, then edit it: read_file shows "<n>→<text>" with
// raw tabs, and edit_file answers with the region as it now is on disk.
func ExampleFilesystem_readThenEdit() {
	dir, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "calc.go"), []byte("func f(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn 0\n}\n"), 0o644)
	sb, _ := localsandbox.New(dir, nil)
	defer sb.Close()

	tools := map[string]*tool.Tool{}
	for _, t := range coretools.Filesystem(sb, nil) {
		tools[t.Name()] = t
	}
	run := func(name, input string) string {
		r := tools[name].Call(context.Background(), &tool.Call{Name: name, Input: []byte(input)})
		return strings.ReplaceAll(r.AllText(), "\t", "<TAB>")
	}
	fmt.Println(run("read_file", `{"path":"calc.go","limit":3}`))
	fmt.Println(run("edit_file", `{"path":"calc.go","old_string":"\tif x > 0 {","new_string":"\tif x > 1 {"}`))
	fmt.Println(run("edit_file", `{"path":"calc.go","old_string":"","new_string":"X"}`))
	// Output:
	// [cut by read_file at the 3-line limit of this call: the file has 6 lines; lines 1-3 shown; lines 4-6 omitted; continue with read_file {"path":"calc.go","offset":4,"limit":3}]
	//      1→func f(x int) int {
	//      2→<TAB>if x > 0 {
	//      3→<TAB><TAB>return x
	//
	// [cut by read_file at the 3-line limit of this call: the file has 6 lines; lines 1-3 shown; lines 4-6 omitted; continue with read_file {"path":"calc.go","offset":4,"limit":3}]
	// edited calc.go: 1 replacement; 58 bytes on disk; sha256 100c58e64a852150b2a6c381a9d24b1105b9306fbd45331448065c6bfb5f685a read back from disk
	// lines 1-5 as now on disk:
	//      1→func f(x int) int {
	//      2→<TAB>if x > 1 {
	//      3→<TAB><TAB>return x
	//      4→<TAB>}
	//      5→<TAB>return 0
	// Parameters error in edit_file: old_string must not be empty; use write_file to create a file (next: to insert text, set old_string to a unique nearby line and new_string to that line plus the new text)
}
