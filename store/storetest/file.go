package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/store"
)

// RunFile runs [Run] with stores opened on a fresh file in t.TempDir(), then
// the cases that need a file: reopening, two instances on one file in one
// process, two processes writing one file at once, and reopening after the
// writing process was killed with SIGKILL mid-writes. open opens the store
// kept at path (the file may not exist yet); the suite closes what it
// opens. The two multi-process cases need the [ChildMain] hook in the
// backend's TestMain.
func RunFile(t *testing.T, open func(t *testing.T, path string) store.Store) {
	fresh := func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "store.db") }
	Run(t, func(t *testing.T) store.Store { return open(t, fresh(t)) })
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open, fresh(t)) })
	t.Run("TwoInstancesOneFile", func(t *testing.T) { testTwoInstances(t, open, fresh(t)) })
	t.Run("TwoProcesses", func(t *testing.T) { testTwoProcesses(t, open, fresh(t)) })
	t.Run("ReopenAfterKill", func(t *testing.T) { testKill(t, open, fresh(t)) })
	t.Run("RunningOfKilledWriterInterrupted", func(t *testing.T) { testInterrupted(t, open, fresh(t)) })
	t.Run("RunningOfLiveWriterKept", func(t *testing.T) { testLiveRunning(t, open, fresh(t)) })
	t.Run("PayloadsAfterKill", func(t *testing.T) { testPayloadKill(t, open, fresh(t)) })
	t.Run("OwnersAlive", func(t *testing.T) { testOwners(t, open, fresh(t)) })
}

// testOwners runs when the store implements store.Owners: two instances
// on one location see each other alive, and one closed as gone; an
// unknown owner is not alive; a killed child process's owner is gone.
func testOwners(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	a := open(t, path)
	defer closeStore(t, a)
	oa, ok := a.(store.Owners)
	if !ok {
		t.Skip("the store does not implement store.Owners")
	}
	b := open(t, path)
	ob := b.(store.Owners)
	idA, idB := oa.Owner(), ob.Owner()
	if idA == "" || idA == idB {
		t.Fatalf("owner ids %q and %q: want two distinct, non-empty ids", idA, idB)
	}
	alive := func(o store.Owners, id string) bool {
		t.Helper()
		ok, err := o.OwnerAlive(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !alive(oa, idA) || !alive(oa, idB) || !alive(ob, idA) {
		t.Error("two open instances do not see each other (and themselves) alive")
	}
	if alive(oa, "7") || alive(oa, "no-such-owner") {
		t.Error("an owner no store had is alive")
	}
	closeStore(t, b)
	if alive(oa, idB) {
		t.Errorf("owner %s is alive after its store closed", idB)
	}
	// A child process's owner (it says which): alive while it runs,
	// gone once it was SIGKILLed, as a store opened after the kill sees.
	p := startChild(t, path, "owners", "o-", 0, 256, false)
	var child string
	for l := range p.lines {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "owner" {
			child = f[1]
			break
		}
	}
	if child == "" {
		t.Fatalf("child named no owner; stderr:\n%s", p.stderr)
	}
	if !alive(oa, child) {
		t.Errorf("owner %s of a running child process is not alive", child)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	for range p.lines {
	}
	waitOwnerGone(t, open, path, child)
	c := open(t, path)
	defer closeStore(t, c)
	if alive(c.(store.Owners), child) {
		t.Errorf("owner %s of a SIGKILLed child is alive", child)
	}
	if !alive(c.(store.Owners), idA) || alive(c.(store.Owners), idB) {
		t.Error("liveness changed for owners the kill did not touch")
	}
}

// testPayloadKill: a child process appends to one payload and replaces
// another, and is killed with SIGKILL mid-writes; after a reopen the log
// is exactly the child's first k pieces for a k at least the appends it
// reported, and the document is one of its versions whole, no older than
// the last one reported.
func testPayloadKill(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	const size = 256 << 10
	s := open(t, path)
	if _, ok := s.(store.Payloads); !ok {
		closeStore(t, s)
		t.Skip("the store does not implement store.Payloads")
	}
	closeStore(t, s)
	p := startChild(t, path, "killed", "k-", 0, size, false, envAppend+"=1")
	appended, lastDoc := -1, -1
	deadline := time.After(2 * time.Minute)
	note := func(l string) {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "appended":
			appended, _ = strconv.Atoi(f[1])
		case len(f) == 2 && f[0] == "putdoc":
			lastDoc, _ = strconv.Atoi(f[1])
		}
	}
	for appended < 60 {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("child ended early; stderr:\n%s", p.stderr)
			}
			note(l)
		case <-deadline:
			t.Fatalf("child appended only %d pieces in 2 minutes", appended+1)
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	for l := range p.lines {
		note(l)
	}

	s = open(t, path)
	defer closeStore(t, s)
	ps := s.(store.Payloads)
	got, n, err := ps.ReadPayload(ctx(t), "killed", childLog, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	k := 0
	for ; len(want) < len(got); k++ {
		want = append(want, childPiece(k)...)
	}
	if !bytes.Equal(got, want) || n != int64(len(got)) {
		t.Fatalf("after the kill the log (%d bytes, size %d) is not the child's first pieces whole", len(got), n)
	}
	if k < appended+1 {
		t.Errorf("after the kill the log holds %d pieces; the child reported %d appends", k, appended+1)
	}
	doc, _, err := ps.ReadPayload(ctx(t), "killed", childDoc, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	version := -1
	for i := lastDoc; i <= appended+4; i += 4 {
		if bytes.Equal(doc, childDocument(i, size)) {
			version = i
		}
	}
	if version < 0 {
		t.Errorf("after the kill the document (%d bytes) is no version the child put at or after its last reported one (%d): %s", len(doc), lastDoc, short(doc[max(len(doc)-40, 0):]))
	}
	// The store takes appends again, after the last whole piece.
	if n2, err := ps.AppendPayload(ctx(t), "killed", childLog, []byte("after")); err != nil || n2 != n+5 {
		t.Errorf("AppendPayload after the kill = %d, %v; want %d", n2, err, n+5)
	}
}

// testLiveRunning: a record running in an instance that is still open is
// not marked interrupted by another instance opening the file; once that
// instance is closed with the record still running (its call abandoned),
// the next open marks it.
func testLiveRunning(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	a := open(t, path)
	run := &store.Record{ToolCallID: "live", TaskID: "t", Tool: "execute", Input: json.RawMessage(`{"command":"sleep 60"}`),
		Outcome: store.OutcomeRunning, StartedAt: base}
	mustPut(t, a, run)
	b := open(t, path)
	if got := mustGet(t, b, "live"); got.Outcome != store.OutcomeRunning || !got.InterruptedAt.IsZero() {
		t.Errorf("a call running in an open instance was marked %q at %v by another instance's open", got.Outcome, got.InterruptedAt)
	}
	closeStore(t, b)
	closeStore(t, a)
	before := time.Now()
	c := open(t, path)
	defer closeStore(t, c)
	got := mustGet(t, c, "live")
	if got.Outcome != store.OutcomeInterrupted || got.InterruptedAt.Before(before.Add(-time.Second)) {
		t.Errorf("after its writer closed, the running record is %q (InterruptedAt %v), want interrupted, found at the reopen", got.Outcome, got.InterruptedAt)
	}
	want := *run
	want.Outcome, want.InterruptedAt = store.OutcomeInterrupted, got.InterruptedAt
	wantRecord(t, got, &want, true)
}

func testReopen(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	s := open(t, path)
	var want []*store.Record
	for i := range 10 {
		r := rec([]string{"x", "y"}[i%2], fmt.Sprintf("call_%d", i))
		mustPut(t, s, r)
		want = append(want, r)
	}
	if _, err := s.ReplaceModel(ctx(t), "call_0", json.RawMessage(`""`), store.CompactionDrop, ""); err != nil {
		t.Fatal(err)
	}
	want[0].Model, want[0].Compaction = json.RawMessage(`""`), store.CompactionDrop
	closeStore(t, s)

	s = open(t, path)
	defer closeStore(t, s)
	for _, r := range want {
		wantRecord(t, mustGet(t, s, r.ToolCallID), r, true)
	}
	if got, err := s.Tasks(ctx(t), 0); err != nil || !slices.Equal(got, []string{"y", "x"}) {
		t.Errorf("Tasks after reopen = %v, %v; want [y x]", got, err)
	}
	next := rec("x", "call_10")
	mustPut(t, s, next)
	if next.Seq != 6 {
		t.Errorf("first Put after reopen got Seq %d, want 6 (task x had 5)", next.Seq)
	}
}

func testTwoInstances(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	a := open(t, path)
	defer closeStore(t, a)
	b := open(t, path)
	defer closeStore(t, b)

	mustPut(t, a, rec("t", "from-a"))
	wantRecord(t, mustGet(t, b, "from-a"), rec("t", "from-a"), false)
	mustPut(t, b, rec("t", "from-b"))
	if l, err := a.ListTask(ctx(t), "t"); err != nil || !slices.Equal(ids(l), []string{"from-a", "from-b"}) {
		t.Errorf("ListTask through a = %v, %v; want [from-a from-b]", ids(l), err)
	}
	// Compaction through one instance is seen by the other.
	if ok, err := b.ReplaceModel(ctx(t), "from-a", json.RawMessage(`"s"`), store.CompactionSummarize, "p"); !ok || err != nil {
		t.Fatalf("ReplaceModel through b = %v, %v", ok, err)
	}
	if r := mustGet(t, a, "from-a"); string(r.Model) != `"s"` {
		t.Errorf("a sees Model %s after b compacted it", r.Model)
	}

	// Both instances write one task at once: Seqs stay unique and gapless.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g, s := range []store.Store{a, b, a, b, a, b} {
		wg.Go(func() {
			for i := range 50 {
				if err := s.Put(ctx(t), rec("shared", fmt.Sprintf("g%d-%d", g, i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, s := range []store.Store{a, b} {
		l, err := s.ListTask(ctx(t), "shared")
		if err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, "shared", l, 300)
	}
}

// The child protocol: environment in, lines out.
const (
	envChild   = "STORETEST_CHILD" // "1" in a child
	envPath    = "STORETEST_PATH"
	envTask    = "STORETEST_TASK"
	envPrefix  = "STORETEST_PREFIX"
	envCount   = "STORETEST_COUNT"   // records to write; 0: until killed
	envSize    = "STORETEST_SIZE"    // largest Output, bytes
	envCompact = "STORETEST_COMPACT" // "1": ReplaceModel after every Put
	envRunning = "STORETEST_RUNNING" // "1": first Put one record still running ("running <id>")
	envAppend  = "STORETEST_APPEND"  // "1": append payload pieces instead of records ("appended <i> <size>", "putdoc <i>")
)

// IsChild reports whether this process is a storetest child, started by
// [RunFile] from the test binary; TestMain then calls [ChildMain] instead
// of running the tests.
func IsChild() bool { return os.Getenv(envChild) != "" }

// ChildMain is the body of a child process started by [RunFile]: it opens
// the store with open on the file the parent names, writes records and
// reports each commit on stdout ("put <id> <seq>", "replaced <id>"), then
// "done". It returns the process exit code: 0, or 1 after printing the
// failure to stderr.
func ChildMain(open func(path string) (store.Store, error)) int {
	if err := child(open); err != nil {
		fmt.Fprintln(os.Stderr, "storetest child:", err)
		return 1
	}
	return 0
}

func child(open func(path string) (store.Store, error)) error {
	count, err := strconv.Atoi(os.Getenv(envCount))
	if err != nil {
		return fmt.Errorf("%s: %w", envCount, err)
	}
	size, err := strconv.Atoi(os.Getenv(envSize))
	if err != nil {
		return fmt.Errorf("%s: %w", envSize, err)
	}
	task, prefix := os.Getenv(envTask), os.Getenv(envPrefix)
	compact := os.Getenv(envCompact) == "1"
	s, err := open(os.Getenv(envPath))
	if err != nil {
		return err
	}
	defer s.Close()
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, a ...any) error {
		fmt.Fprintf(out, format+"\n", a...)
		return out.Flush() // a line is out before the next write starts
	}
	if err := say("ready"); err != nil {
		return err
	}
	if o, ok := s.(store.Owners); ok {
		if err := say("owner %s", o.Owner()); err != nil {
			return err
		}
	}
	c := context.Background()
	if os.Getenv(envRunning) == "1" {
		r := childRunning(task, prefix)
		if err := s.Put(c, r); err != nil {
			return err
		}
		if err := say("running %s", r.ToolCallID); err != nil {
			return err
		}
	}
	if os.Getenv(envAppend) == "1" {
		p, ok := s.(store.Payloads)
		if !ok {
			return errors.New("the store does not implement store.Payloads")
		}
		for i := 0; count == 0 || i < count; i++ {
			n, err := p.AppendPayload(c, task, childLog, childPiece(i))
			if err != nil {
				return err
			}
			if err := say("appended %d %d", i, n); err != nil {
				return err
			}
			if i%4 == 0 {
				if err := p.PutPayload(c, task, childDoc, childDocument(i, size)); err != nil {
					return err
				}
				if err := say("putdoc %d", i); err != nil {
					return err
				}
			}
		}
	}
	for i := 0; os.Getenv(envAppend) != "1" && (count == 0 || i < count); i++ {
		r := childRecord(task, prefix, i, size)
		if err := s.Put(c, r); err != nil {
			return err
		}
		if err := say("put %s %d", r.ToolCallID, r.Seq); err != nil {
			return err
		}
		if compact {
			m, cmp, p := childCompacted(r)
			ok, err := s.ReplaceModel(c, r.ToolCallID, m, cmp, p)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("ReplaceModel(%s) did not replace", r.ToolCallID)
			}
			if err := say("replaced %s", r.ToolCallID); err != nil {
				return err
			}
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	return say("done")
}

// childRecord is record i of a child writer: deterministic, so the parent
// can check every byte, with an Output of up to size bytes.
func childRecord(task, prefix string, i, size int) *store.Record {
	id := fmt.Sprintf("%s%06d", prefix, i)
	n := 64 + (i*7919)%size
	return &store.Record{
		ToolCallID: id,
		TaskID:     task,
		Tool:       "execute",
		Input:      json.RawMessage(fmt.Sprintf(`{"command":"step %d"}`, i)),
		Output:     large(max(n, 64)),
		Model:      json.RawMessage(fmt.Sprintf(`"model of %s %s"`, id, strings.Repeat("m", 200))),
		Outcome:    store.OutcomeOK,
		StartedAt:  base.Add(time.Duration(i) * time.Second),
		EndedAt:    base.Add(time.Duration(i)*time.Second + 250*time.Millisecond),
	}
}

// The payloads of an appending child: a log it appends childPiece(i) to,
// and a document it replaces with childDocument(i, size) every 4th piece.
const (
	childLog = "jobs/child.log"
	childDoc = "compacted_outputs/child/doc.json"
)

func childPiece(i int) []byte {
	return fmt.Appendf(nil, "piece %d %s\n", i, strings.Repeat("p", (i*7919)%(3<<10)))
}

func childDocument(i, size int) []byte {
	doc := large(size)
	copy(doc[len(doc)-16:], fmt.Sprintf("%012d\"}]}", i))
	return doc
}

// childRunning is the record a child leaves running.
func childRunning(task, prefix string) *store.Record {
	return &store.Record{ToolCallID: prefix + "running", TaskID: task, Tool: "execute",
		Input: json.RawMessage(`{"command":"sleep 600"}`), Outcome: store.OutcomeRunning, StartedAt: base}
}

func childCompacted(r *store.Record) (json.RawMessage, store.Compaction, string) {
	return json.RawMessage(`"compacted ` + r.ToolCallID + `"`), store.CompactionTrim,
		"compacted_outputs/" + r.TaskID + "/" + r.ToolCallID + ".json"
}

// childProc is a running child writer.
type childProc struct {
	cmd    *exec.Cmd
	lines  chan string // closed at the child's stdout EOF
	stderr *bytes.Buffer
}

func startChild(t *testing.T, path, task, prefix string, count, size int, compact bool, env ...string) *childProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$") // runs no test if TestMain lacks the hook
	cmd.Env = append(os.Environ(),
		envChild+"=1", envPath+"="+path, envTask+"="+task, envPrefix+"="+prefix,
		envCount+"="+strconv.Itoa(count), envSize+"="+strconv.Itoa(size),
		envCompact+"="+map[bool]string{true: "1", false: "0"}[compact])
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &childProc{cmd: cmd, lines: make(chan string, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() { // never leave a child behind
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	select {
	case l, ok := <-p.lines:
		if ok && l == "ready" {
			return p
		}
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not report ready (first line %q); does TestMain call storetest.ChildMain when storetest.IsChild()? stderr:\n%s", l, p.stderr)
	case <-time.After(time.Minute):
		t.Fatalf("child not ready after a minute; stderr:\n%s", p.stderr)
	}
	return nil
}

func testTwoProcesses(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	const n = 300
	const size = 2048
	s := open(t, path) // the parent's instance creates the file first
	defer closeStore(t, s)
	p := startChild(t, path, "shared", "child-", n, size, false)

	// Read the child's commits through the parent's instance while the
	// parent writes into the same task.
	var seen []string
	readErr := make(chan error, 1)
	go func() {
		for l := range p.lines {
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "put" {
				got, err := s.Get(ctx(t), f[1])
				if err != nil {
					readErr <- fmt.Errorf("child committed %s, parent cannot read it: %w", f[1], err)
					return
				}
				if d := diff(got, childRecord("shared", "child-", len(seen), size), false); len(d) > 0 {
					readErr <- fmt.Errorf("child record %s read by the parent differs: %v", f[1], d)
					return
				}
				seen = append(seen, f[1])
			}
		}
		readErr <- nil
	}()
	for i := range n {
		mustPut(t, s, childRecord("shared", "parent-", i, size))
	}
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, p.stderr)
	}
	if len(seen) != n {
		t.Fatalf("child reported %d commits, want %d", len(seen), n)
	}
	l, err := s.ListTask(ctx(t), "shared")
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, "shared", l, 2*n)
	var fromChild, fromParent int
	for _, r := range l {
		var i int
		var who string
		switch {
		case strings.HasPrefix(r.ToolCallID, "child-"):
			who, fromChild = "child-", fromChild+1
		case strings.HasPrefix(r.ToolCallID, "parent-"):
			who, fromParent = "parent-", fromParent+1
		}
		i, _ = strconv.Atoi(strings.TrimPrefix(r.ToolCallID, who))
		if d := diff(r, childRecord("shared", who, i, size), false); len(d) > 0 {
			t.Errorf("record %s differs: %v", r.ToolCallID, d)
		}
	}
	if fromChild != n || fromParent != n {
		t.Errorf("shared task holds %d child and %d parent records, want %d each", fromChild, fromParent, n)
	}
}

func testKill(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	const minCommits = 40
	const size = 512 << 10
	// The file exists with one record before the child starts.
	s := open(t, path)
	first := rec("other", "before")
	mustPut(t, s, first)
	closeStore(t, s)

	p := startChild(t, path, "killed", "k-", 0, size, true)
	puts := map[string]bool{}
	replaced := map[string]bool{}
	deadline := time.After(2 * time.Minute)
	record := func(l string) {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "put":
			puts[f[1]] = true
		case len(f) == 2 && f[0] == "replaced":
			replaced[f[1]] = true
		}
	}
wait:
	for len(puts) < minCommits {
		select {
		case l, ok := <-p.lines:
			if !ok {
				break wait
			}
			record(l)
		case <-deadline:
			t.Fatalf("child committed only %d records in 2 minutes", len(puts))
		}
	}
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	for l := range p.lines { // commits reported before the kill
		record(l)
	}
	if len(puts) < minCommits {
		t.Fatalf("child ended before the kill (%v) after %d commits; stderr:\n%s", err, len(puts), p.stderr)
	}
	if err == nil {
		t.Fatalf("child exited cleanly; it should have been killed")
	}

	s = open(t, path)
	defer closeStore(t, s)
	wantRecord(t, mustGet(t, s, "before"), first, true)
	l, err := s.ListTask(ctx(t), "killed")
	if err != nil {
		t.Fatal(err)
	}
	// Writes were sequential: the stored records are k-000000.. in order,
	// all the reported ones plus at most one committed but not reported.
	if len(l) < len(puts) || len(l) > len(puts)+1 {
		t.Errorf("after the kill the task holds %d records; the child reported %d commits", len(l), len(puts))
	}
	for i, r := range l {
		want := childRecord("killed", "k-", i, size)
		if r.ToolCallID != want.ToolCallID || r.Seq != int64(i+1) {
			t.Fatalf("record %d is %s Seq %d, want %s Seq %d", i, r.ToolCallID, r.Seq, want.ToolCallID, i+1)
		}
		// The model is the original or the compacted one, never a mix;
		// compacted for sure when the child reported it.
		m, c, ptr := childCompacted(want)
		if bytes.Equal(r.Model, m) {
			want.Model, want.Compaction, want.Pointer = m, c, ptr
		} else if replaced[r.ToolCallID] {
			t.Errorf("%s: reported compacted, but Model is %s", r.ToolCallID, short(r.Model))
		}
		wantRecord(t, r, want, false)
	}
	for id := range puts {
		if _, err := s.Get(ctx(t), id); err != nil {
			t.Errorf("committed record %s lost after the kill: %v", id, err)
		}
	}
	// The store takes writes again, continuing the task's Seqs.
	next := childRecord("killed", "k-", len(l), size)
	mustPut(t, s, next)
	if next.Seq != int64(len(l)+1) {
		t.Errorf("first Put after the kill got Seq %d, want %d", next.Seq, len(l)+1)
	}
	if _, err := s.Get(ctx(t), next.ToolCallID); errors.Is(err, store.ErrNotFound) {
		t.Errorf("Put after the kill not readable: %v", err)
	}
}

// testInterrupted: a child process puts a record still running, then
// records, and is killed with SIGKILL; the next open marks the running one
// interrupted (when it was found so) and leaves every other record as it
// was.
func testInterrupted(t *testing.T, open func(*testing.T, string) store.Store, path string) {
	s := open(t, path)
	mustPut(t, s, rec("other", "before"))
	closeStore(t, s)

	p := startChild(t, path, "killed", "k-", 0, 4096, false, envRunning+"=1")
	var running, owner string
	puts := 0
	deadline := time.After(2 * time.Minute)
	for running == "" || puts < 5 {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("child ended early; stderr:\n%s", p.stderr)
			}
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "running":
				running = f[1]
			case len(f) == 2 && f[0] == "owner":
				owner = f[1]
			case len(f) == 3 && f[0] == "put":
				puts++
			}
		case <-deadline:
			t.Fatal("child too slow")
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	for range p.lines {
	}
	killed := time.Now()
	waitOwnerGone(t, open, path, owner)

	s = open(t, path)
	defer closeStore(t, s)
	got := mustGet(t, s, running)
	if got.Outcome != store.OutcomeInterrupted {
		t.Fatalf("the record running when its process was killed is %q after reopen, want %q", got.Outcome, store.OutcomeInterrupted)
	}
	if got.InterruptedAt.Before(killed.Add(-time.Second)) || got.InterruptedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("InterruptedAt %v, want the reopen (killed at %v)", got.InterruptedAt, killed)
	}
	want := childRunning("killed", "k-")
	want.Outcome, want.InterruptedAt = store.OutcomeInterrupted, got.InterruptedAt
	wantRecord(t, got, want, false)
	wantRecord(t, mustGet(t, s, "before"), rec("other", "before"), false)
	l, err := s.ListTask(ctx(t), "killed")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l {
		if r.ToolCallID != running && r.Outcome != store.OutcomeOK {
			t.Errorf("finished record %s changed to %q", r.ToolCallID, r.Outcome)
		}
	}
	// A second open finds nothing more to mark: the time stays.
	again := open(t, path)
	defer closeStore(t, again)
	if r := mustGet(t, again, running); !r.InterruptedAt.Equal(got.InterruptedAt) {
		t.Errorf("a second open re-marked the record: %v, was %v", r.InterruptedAt, got.InterruptedAt)
	}
}

// ownerWaiter is a store whose owners' liveness lags a process's death:
// a server-held lock, dropped once the server notices the session ended
// (pgstore.Store.WaitOwnerGone).
type ownerWaiter interface {
	WaitOwnerGone(ctx context.Context, owner string) error
}

// waitOwnerGone waits, where the store can say (ownerWaiter), until the
// killed child's owner is gone as the store sees it, so the next open
// finds it so; a store whose liveness follows the process at once (a
// file lock) has nothing to wait for.
func waitOwnerGone(t *testing.T, open func(*testing.T, string) store.Store, path, owner string) {
	t.Helper()
	if owner == "" {
		return
	}
	s := open(t, path)
	defer closeStore(t, s)
	w, ok := s.(ownerWaiter)
	if !ok {
		return
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.WaitOwnerGone(c, owner); err != nil {
		t.Fatalf("owner %s of the killed child still alive: %v", owner, err)
	}
}
