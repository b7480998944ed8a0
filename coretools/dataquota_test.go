package coretools

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// quotaFolder is a data folder with files of given sizes and ages.
type quotaFolder struct {
	t    *testing.T
	root string
}

func newQuotaFolder(t *testing.T) quotaFolder { return quotaFolder{t, t.TempDir()} }

func (q quotaFolder) put(rel string, size int, age time.Duration) string {
	q.t.Helper()
	p := filepath.Join(q.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		q.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("o", size)), 0o600); err != nil {
		q.t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		q.t.Fatal(err)
	}
	return p
}

func (q quotaFolder) exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// total is the bytes of every regular file under the folder.
func (q quotaFolder) total() int64 {
	var n int64
	filepath.WalkDir(q.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func (q quotaFolder) rig(t *testing.T, max int64, opts ExecuteOptions) *execRig {
	opts.OutputDir = filepath.Join(q.root, "outputs")
	opts.Quota = &DataQuota{Root: q.root, MaxBytes: max,
		Evict: []string{filepath.Join(q.root, "outputs"), filepath.Join(q.root, "compacted_outputs")}}
	return newExecRig(t, nil, &opts)
}

// Before a full output file grows past the data folder's bound, the
// oldest evictable files go first (full outputs and offloads, by
// modification time) and only as many as needed; files outside the Evict
// folders (the records database) count but stay.
func TestExecuteQuotaEvictsOldestFirst(t *testing.T) {
	q := newQuotaFolder(t)
	db := q.put("records.db", 1000, 10*time.Hour)
	oldest := q.put("outputs/task-1/call-a.log", 3000, 5*time.Hour)
	offload := q.put("compacted_outputs/task-1/call-b.json", 3000, 4*time.Hour)
	newer := q.put("outputs/task-2/call-c.log", 3000, 3*time.Hour)
	r := q.rig(t, 12000, ExecuteOptions{})
	res, _ := r.call(context.Background(), map[string]any{"command": "head -c 4000 /dev/zero | tr '\\0' x"})
	p, _ := res.Evidence["full_output_path"].(string)
	if b, err := os.ReadFile(p); err != nil || len(b) != 4000 {
		t.Fatalf("full output %q: %d bytes %v\n%s", p, len(b), err, res.AllText())
	}
	if q.exists(oldest) || q.exists(filepath.Dir(oldest)) {
		t.Errorf("the oldest full output (and its empty task folder) should be gone")
	}
	if !q.exists(offload) || !q.exists(newer) || !q.exists(db) {
		t.Errorf("more was removed than needed, or the records database: offload %v newer %v db %v",
			q.exists(offload), q.exists(newer), q.exists(db))
	}
	if res.Evidence["evicted_outputs"] != 1 || res.Evidence["full_output_stopped"] != nil {
		t.Errorf("evidence %v", res.Evidence)
	}
	if got := q.total(); got > 12000 {
		t.Errorf("the folder holds %d bytes, over its 12,000-byte bound", got)
	}
	// The next call needs room again: the offload is now the oldest.
	res, _ = r.call(context.Background(), map[string]any{"command": "head -c 4000 /dev/zero | tr '\\0' y"})
	if q.exists(offload) || !q.exists(newer) || !q.exists(p) {
		t.Errorf("second call: offload %v newer %v", q.exists(offload), q.exists(newer))
	}
	if got := q.total(); got > 12000 || res.Evidence["full_output_stopped"] != nil {
		t.Errorf("the folder holds %d bytes; evidence %v", got, res.Evidence)
	}
}

// When nothing more can be removed, the file stops growing: the result
// says so and offers only the omitted lines the file holds, and the folder
// stays within its bound.
func TestExecuteQuotaStopsFileAndSaysSo(t *testing.T) {
	q := newQuotaFolder(t)
	q.put("records.db", 4000, time.Hour) // never removed
	old := q.put("outputs/task-1/call-a.log", 500, time.Hour)
	r := q.rig(t, 5000, ExecuteOptions{MaxOutputChars: 200})
	res, _ := r.call(context.Background(), map[string]any{"command": "seq 1 20000"})
	text := res.AllText()
	p, _ := res.Evidence["full_output_path"].(string)
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 || int64(len(b)) != 5000-4000 {
		t.Fatalf("full output %q: %d bytes (want the 1,000 left), %v\n%s", p, len(b), err, text)
	}
	if q.exists(old) || q.total() > 5000 {
		t.Errorf("old output kept %v; folder %d bytes", q.exists(old), q.total())
	}
	if res.Evidence["full_output_stopped"] != "data_dir_limit" ||
		!strings.Contains(text, "stopped: the data folder is at its 5,000-byte limit (limits.dataDirMaxBytes)") {
		t.Errorf("the result does not say the data folder stopped the file:\n%s\n%v", text, res.Evidence)
	}
	inFile := int64(strings.Count(string(b), "\n"))
	m := regexp.MustCompile(`sed -n '(\d+),(\d+)p'`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no sed range offered:\n%s", text)
	}
	if last, _ := strconv.ParseInt(m[2], 10, 64); last > inFile {
		t.Errorf("sed range ends at %s, past the file's %d lines:\n%s", m[2], inFile, text)
	}
	if !strings.Contains(text, fmt.Sprintf(`"lines":"%s-%d"`, m[1], inFile)) ||
		!strings.Contains(text, fmt.Sprintf("the omitted lines after line %d are past the data folder's limit (limits.dataDirMaxBytes) and cannot be recovered", inFile)) {
		t.Errorf("view_tool_call or the unrecoverable rest do not match the file:\n%s", text)
	}
}

// With no room at all the empty file is not left behind and the result
// names neither a file nor lines to read from one.
func TestExecuteQuotaNoRoomKeepsNothing(t *testing.T) {
	q := newQuotaFolder(t)
	q.put("records.db", 6000, time.Hour)
	r := q.rig(t, 5000, ExecuteOptions{MaxOutputChars: 200})
	res, _ := r.call(context.Background(), map[string]any{"command": "seq 1 5000"})
	text := res.AllText()
	if _, ok := res.Evidence["full_output_path"]; ok || res.Evidence["full_output_stopped"] != "data_dir_limit" {
		t.Errorf("evidence %v", res.Evidence)
	}
	if !strings.Contains(text, "full output: not kept: the data folder is at its 5,000-byte limit") ||
		strings.Contains(text, "view_tool_call") || strings.Contains(text, "sed -n") ||
		!strings.Contains(text, "re-run narrower") {
		t.Errorf("header:\n%s", text)
	}
	ents, _ := os.ReadDir(filepath.Join(q.root, "outputs"))
	for _, e := range ents {
		sub, _ := os.ReadDir(filepath.Join(q.root, "outputs", e.Name()))
		if !e.IsDir() || len(sub) > 0 {
			t.Errorf("left in outputs: %s %v", e.Name(), sub)
		}
	}
	// A command with no output at all keeps its (empty) file as before.
	res, _ = r.call(context.Background(), map[string]any{"command": "true"})
	if _, ok := res.Evidence["full_output_path"]; !ok || res.Evidence["full_output_stopped"] != nil {
		t.Errorf("no output: evidence %v", res.Evidence)
	}
}

// A file this executor is writing, and files changed after the call
// began, are never removed to make room.
func TestDataQuotaSparesFilesInUse(t *testing.T) {
	q := newQuotaFolder(t)
	mine := q.put("outputs/t/mine.log", 3000, 2*time.Hour)
	fresh := q.put("outputs/t/fresh.log", 3000, 0)
	old := q.put("outputs/t/old.log", 3000, time.Hour)
	dq := newDataQuota(&DataQuota{Root: q.root, MaxBytes: 7000}, filepath.Join(q.root, "outputs"))
	dq.begin(mine)
	granted, removed := dq.reserve(4000, 1<<30, time.Now().Add(-time.Minute))
	if removed != 1 || q.exists(old) || !q.exists(mine) || !q.exists(fresh) {
		t.Errorf("removed %d: old %v mine %v fresh %v", removed, q.exists(old), q.exists(mine), q.exists(fresh))
	}
	if granted != 1000 {
		t.Errorf("granted %d, want the 1,000 bytes left", granted)
	}
	dq.end(mine)
}

// A write error (here /dev/full: no space left on device) stops the file;
// the result says so and offers no line the file does not hold.
func TestExecuteHeaderWhenOutputFileWriteFails(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full on this system")
	}
	defer f.Close()
	e := &executor{opts: (&ExecuteOptions{MaxOutputChars: 200, OutputDir: t.TempDir()}).withDefaults()}
	out := newOutputCap(200, nil)
	out.keepFile(f, 1<<30, nil)
	w := out.writer(outStdout)
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(w, "%d\n", i)
	}
	out.finish()
	res := e.result("call_1", time.Second, execOutcome{res: &sandbox.ExecResult{}}, false, false, nil, out)
	text := res.AllText()
	if res.Evidence["full_output_stopped"] != "write_error" || !strings.Contains(text, "writing failed") ||
		!strings.Contains(text, "no space left on device") {
		t.Errorf("result does not say writing failed:\n%s\n%v", text, res.Evidence)
	}
	if strings.Contains(text, "view_tool_call") || strings.Contains(text, "sed -n") ||
		!strings.Contains(text, "cannot be recovered: re-run narrower, or free disk space") {
		t.Errorf("the header offers lines the file does not hold:\n%s", text)
	}
}
