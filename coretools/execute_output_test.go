package coretools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/tool"
)

// The instructions (system prompt, MCP initialize) and the description
// state the configured bounds, not the defaults.
func TestExecuteInstructionsStateConfiguredNumbers(t *testing.T) {
	opts := &ExecuteOptions{DefaultTimeout: 45 * time.Second, MaxTimeout: 5 * time.Minute, MaxOutputChars: 1001, OutputDir: t.TempDir()}
	ins := ExecuteInstructions(opts)
	desc := Execute(unsupportedSandbox{}, opts).Description()
	for name, text := range map[string]string{"instructions": ins, "description": desc} {
		for _, want := range []string{"45 s", "at most 5 min", "1,001 characters", "the first 500 and the last 501"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lack %q:\n%s", name, want, text)
			}
		}
		for _, stale := range []string{"2 min", "10 min", "30,000", "15,000"} {
			if strings.Contains(text, stale) {
				t.Errorf("%s state the default %q:\n%s", name, stale, text)
			}
		}
	}
	if !strings.Contains(ins, "view_tool_call") {
		t.Errorf("instructions with an OutputDir do not name the recovery:\n%s", ins)
	}
	var group string
	for _, g := range Groups(nil, opts) {
		if g.Key == ExecuteKey {
			group = g.Instructions
		}
	}
	if group != ins {
		t.Errorf("the execute group's instructions are not built from its options:\n%s", group)
	}
	def := ExecuteInstructions(nil)
	for _, want := range []string{"after 2 min", "at most 10 min", "30,000 characters", "the first and last 15,000"} {
		if !strings.Contains(def, want) {
			t.Errorf("default instructions lack %q:\n%s", want, def)
		}
	}
	if strings.Contains(def, "full output file") {
		t.Errorf("instructions without an OutputDir mention a full output file:\n%s", def)
	}
}

// Full output files go to OutputDir/<taskId>/<toolCallId>.log when ctx
// carries a task id; ids cannot leave OutputDir; a repeated id never
// overwrites an earlier file.
func TestExecuteFullOutputPerTask(t *testing.T) {
	dir := t.TempDir()
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: dir})
	run := func(ctx context.Context, id string) string {
		t.Helper()
		res := r.tool.Call(ctx, &tool.Call{ID: id, Input: []byte(`{"command":"echo kept"}`)})
		p, _ := res.Evidence["full_output_path"].(string)
		if b, err := os.ReadFile(p); err != nil || string(b) != "kept\n" {
			t.Fatalf("call %q: full output %q: %q %v\n%s", id, p, b, err, res.AllText())
		}
		return p
	}
	ctx := tool.WithTaskID(context.Background(), "task-1")
	if p := run(ctx, "toolu_01"); p != filepath.Join(dir, "task-1", "toolu_01.log") {
		t.Errorf("path %s", p)
	}
	if p := run(ctx, "toolu_01"); p != filepath.Join(dir, "task-1", "toolu_01~2.log") {
		t.Errorf("repeated id: path %s", p)
	}
	if p := run(context.Background(), "toolu_02"); p != filepath.Join(dir, "toolu_02.log") {
		t.Errorf("no task: path %s", p)
	}
	if p := run(context.Background(), ""); filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "call-") {
		t.Errorf("no id: path %s", p)
	}
	// Hostile ids stay inside OutputDir, one level below it at most.
	for _, ids := range [][2]string{{"../../etc", "../passwd"}, {"..", "."}, {"a/b", "/abs/x"}, {".hidden", "c\x00d"}} {
		p := run(tool.WithTaskID(context.Background(), ids[0]), ids[1])
		rel, err := filepath.Rel(dir, p)
		if err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 ||
			strings.HasPrefix(filepath.Base(p), ".") || strings.HasPrefix(filepath.Base(filepath.Dir(p)), ".") {
			t.Errorf("task %q call %q: path %s", ids[0], ids[1], p)
		}
	}
	if a, b := tool.SafeFileName("a/b"), tool.SafeFileName("a_b"); a == b {
		t.Errorf("distinct ids share the name %q", a)
	}
}

// When the full output file stops at its size limit, the header offers
// only the omitted lines the file holds and says the rest cannot be
// recovered; the offered sed range is really in the file.
func TestExecuteHeaderWhenOutputFileIsFull(t *testing.T) {
	dir := t.TempDir()
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: dir, MaxOutputChars: 200, MaxOutputFileBytes: 1000})
	res, _ := r.call(context.Background(), map[string]any{"command": "seq 1 100000"})
	text := res.AllText()
	p, _ := res.Evidence["full_output_path"].(string)
	b, err := os.ReadFile(p)
	if err != nil || len(b) != 1000 {
		t.Fatalf("full output %q: %d bytes %v", p, len(b), err)
	}
	inFile := int64(strings.Count(string(b), "\n"))
	if !strings.Contains(text, fmt.Sprintf("the omitted lines after line %d are past the full output file's 1,000-byte limit and cannot be recovered", inFile)) {
		t.Errorf("header does not say what cannot be recovered:\n%s", text)
	}
	m := regexp.MustCompile(`sed -n '(\d+),(\d+)p'`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no sed range offered:\n%s", text)
	}
	if last, _ := strconv.ParseInt(m[2], 10, 64); last != inFile {
		t.Errorf("sed range ends at %s, want %d (the file's last line)", m[2], inFile)
	}
	if !strings.Contains(text, fmt.Sprintf(`"lines":"%s-%d"`, m[1], inFile)) {
		t.Errorf("view_tool_call range does not match:\n%s", text)
	}
}
