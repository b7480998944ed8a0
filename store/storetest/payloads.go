package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/store"
)

// runPayloadsAndJobs adds the cases of the optional interfaces
// store.Payloads and store.Jobs (each skips when the store lacks it).
func runPayloadsAndJobs(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("PayloadsPutAppendRead", func(t *testing.T) { testPayloadBasics(t, open(t)) })
	t.Run("PayloadNames", func(t *testing.T) { testPayloadNames(t, open(t)) })
	t.Run("PayloadAtomicReplace", func(t *testing.T) { testPayloadReplace(t, open(t)) })
	t.Run("PayloadConcurrentAppends", func(t *testing.T) { testPayloadAppends(t, open(t)) })
	t.Run("PayloadLarge", func(t *testing.T) { testPayloadLarge(t, open(t)) })
	t.Run("JobsPutGetList", func(t *testing.T) { testJobs(t, open(t)) })
	t.Run("PruneTakesPayloadsAndJobs", func(t *testing.T) { testPrunePayloadsJobs(t, open(t)) })
}

func payloadsOf(t *testing.T, s store.Store) store.Payloads {
	t.Helper()
	p, ok := s.(store.Payloads)
	if !ok {
		closeStore(t, s)
		t.Skip("the store does not implement store.Payloads")
	}
	return p
}

func jobsOf(t *testing.T, s store.Store) store.Jobs {
	t.Helper()
	j, ok := s.(store.Jobs)
	if !ok {
		closeStore(t, s)
		t.Skip("the store does not implement store.Jobs")
	}
	return j
}

// wantPayload reads the whole payload and compares it with want.
func wantPayload(t *testing.T, p store.Payloads, task, name string, want []byte) {
	t.Helper()
	got, size, err := p.ReadPayload(ctx(t), task, name, 0, 0)
	if err != nil {
		t.Fatalf("ReadPayload(%s, %s): %v", task, name, err)
	}
	if size != int64(len(want)) || !bytes.Equal(got, want) {
		t.Errorf("ReadPayload(%s, %s) = %s (size %d), want %s (size %d)", task, name, short(got), size, short(want), len(want))
	}
}

func testPayloadBasics(t *testing.T, s store.Store) {
	p := payloadsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	if _, _, err := p.ReadPayload(c, "t", "outputs/none.log", 0, 0); !errors.Is(err, store.ErrNoPayload) {
		t.Errorf("ReadPayload of a missing payload = %v, want an error wrapping ErrNoPayload", err)
	}
	data := []byte("0123456789abcdefghij\x00\xff\n end")
	given := slices.Clone(data)
	if err := p.PutPayload(c, "t", "outputs/call_1.log", given); err != nil {
		t.Fatal(err)
	}
	given[0] = 'X' // the store must not alias the caller's buffer
	wantPayload(t, p, "t", "outputs/call_1.log", data)
	for _, r := range []struct{ off, limit int64 }{
		{0, 5}, {5, 5}, {10, 0}, {10, -1}, {20, 3}, {int64(len(data)) - 1, 10}, {int64(len(data)), 4}, {int64(len(data)) + 10, 0}, {3, 1 << 40},
	} {
		got, size, err := p.ReadPayload(c, "t", "outputs/call_1.log", r.off, r.limit)
		if err != nil {
			t.Errorf("ReadPayload(offset %d, limit %d): %v", r.off, r.limit, err)
			continue
		}
		lo := min(r.off, int64(len(data)))
		hi := int64(len(data))
		if r.limit > 0 {
			hi = min(hi, lo+r.limit)
		}
		if size != int64(len(data)) || !bytes.Equal(got, data[lo:hi]) {
			t.Errorf("ReadPayload(offset %d, limit %d) = %q size %d, want %q size %d", r.off, r.limit, got, size, data[lo:hi], len(data))
		}
	}
	// The same name in another task is another payload.
	if _, _, err := p.ReadPayload(c, "u", "outputs/call_1.log", 0, 0); !errors.Is(err, store.ErrNoPayload) {
		t.Errorf("ReadPayload in another task = %v, want ErrNoPayload", err)
	}
	// Append creates, then grows; it returns the new size.
	var want []byte
	for i, part := range []string{"first line\n", "", "second\n", strings.Repeat("z", 70000), "tail"} {
		want = append(want, part...)
		n, err := p.AppendPayload(c, "t", "jobs/j1.log", []byte(part))
		if err != nil {
			t.Fatalf("AppendPayload #%d: %v", i, err)
		}
		if n != int64(len(want)) {
			t.Errorf("AppendPayload #%d returned size %d, want %d", i, n, len(want))
		}
	}
	wantPayload(t, p, "t", "jobs/j1.log", want)
	got, _, err := p.ReadPayload(c, "t", "jobs/j1.log", 5, 20)
	if err != nil || string(got) != string(want[5:25]) {
		t.Errorf("ReadPayload(5, 20) of the appended payload = %q, %v; want %q", got, err, want[5:25])
	}
	// Put replaces an appended payload whole, smaller too; an empty
	// payload exists with size 0.
	if err := p.PutPayload(c, "t", "jobs/j1.log", []byte("short")); err != nil {
		t.Fatal(err)
	}
	wantPayload(t, p, "t", "jobs/j1.log", []byte("short"))
	if n, err := p.AppendPayload(c, "t", "jobs/j1.log", []byte("+more")); err != nil || n != 10 {
		t.Errorf("AppendPayload after Put = %d, %v; want 10", n, err)
	}
	wantPayload(t, p, "t", "jobs/j1.log", []byte("short+more"))
	if err := p.PutPayload(c, "t", "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, size, err := p.ReadPayload(c, "t", "empty", 0, 0); err != nil || size != 0 || len(got) != 0 {
		t.Errorf("ReadPayload of an empty payload = %q, %d, %v; want no bytes, size 0, no error", got, size, err)
	}
	if _, _, err := p.ReadPayload(c, "t", "outputs/call_1.log", -1, 0); err == nil {
		t.Error("ReadPayload with a negative offset succeeded")
	}
	if err := p.PutPayload(c, "", "x", []byte("x")); err == nil {
		t.Error("PutPayload with an empty task id succeeded")
	}
}

func testPayloadNames(t *testing.T, s store.Store) {
	p := payloadsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	good := []string{"a", "compacted_outputs/task-1/call_1.json", "outputs/call_1.log", "jobs/j 1.log", "x..y/.hidden/a.b",
		"ünï/çødé", strings.Repeat("n", store.MaxPayloadName)}
	for _, name := range good {
		if err := p.PutPayload(c, "t", name, []byte(name)); err != nil {
			t.Errorf("PutPayload(%q): %v", short([]byte(name)), err)
			continue
		}
		wantPayload(t, p, "t", name, []byte(name))
	}
	bad := map[string]string{
		"":            "empty",
		"/abs":        "leading slash",
		"trailing/":   "trailing slash",
		"a//b":        "empty element",
		".":           "dot",
		"a/./b":       "dot element",
		"..":          "dot-dot",
		"a/../b":      "dot-dot element",
		"../escape":   "leading dot-dot",
		"nul\x00byte": "NUL",
		strings.Repeat("n", store.MaxPayloadName+1): "too long",
	}
	for name, why := range bad {
		if err := p.PutPayload(c, "t", name, []byte("x")); err == nil {
			t.Errorf("PutPayload accepted a name with a %s (%q)", why, short([]byte(name)))
		}
		if _, err := p.AppendPayload(c, "t", name, []byte("x")); err == nil {
			t.Errorf("AppendPayload accepted a name with a %s", why)
		}
		if _, _, err := p.ReadPayload(c, "t", name, 0, 0); err == nil || errors.Is(err, store.ErrNoPayload) {
			t.Errorf("ReadPayload of a name with a %s = %v, want a name error (not ErrNoPayload)", why, err)
		}
	}
}

// testPayloadReplace: readers running beside a writer that replaces a
// payload back and forth between two contents of different sizes see one
// or the other, whole, never a mix.
func testPayloadReplace(t *testing.T, s store.Store) {
	p := payloadsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	a := bytes.Repeat([]byte("a"), 3<<20+17)
	b := bytes.Repeat([]byte("b"), 1<<20+5)
	if err := p.PutPayload(c, "t", "doc", a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for range 3 {
		wg.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads == 0 {
						errs <- errors.New("a reader read nothing")
					}
					return
				default:
				}
				got, size, err := p.ReadPayload(c, "t", "doc", 0, 0)
				if err != nil {
					errs <- err
					return
				}
				if !(bytes.Equal(got, a) && size == int64(len(a))) && !(bytes.Equal(got, b) && size == int64(len(b))) {
					errs <- fmt.Errorf("a reader saw %d bytes (size %d) that are neither payload whole: %s", len(got), size, short(got))
					return
				}
				// A range read is one snapshot too.
				part, size, err := p.ReadPayload(c, "t", "doc", int64(len(b))-3, 6)
				if err != nil {
					errs <- err
					return
				}
				if want := map[int64]string{int64(len(a)): "aaaaaa", int64(len(b)): "bbb"}[size]; string(part) != want {
					errs <- fmt.Errorf("range read across b's end gave %q with size %d, want %q", part, size, want)
					return
				}
			}
		})
	}
	for i := range 20 {
		next := a
		if i%2 == 0 {
			next = b
		}
		if err := p.PutPayload(c, "t", "doc", next); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantPayload(t, p, "t", "doc", a)
}

// testPayloadAppends: concurrent appends to one payload each land whole
// and contiguous, ending at the size the append returned.
func testPayloadAppends(t *testing.T, s store.Store) {
	p := payloadsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	const goroutines, each = 8, 60
	piece := func(g, i int) []byte {
		// Lengths vary from a few bytes to past 64 KiB, to cross any
		// chunking of the backend.
		n := (g*each + i) * 7919 % 90000
		if i%5 != 0 {
			n %= 200
		}
		return fmt.Appendf(nil, "<%d.%d:%s>", g, i, strings.Repeat(string(rune('a'+g)), n))
	}
	type end struct {
		g, i int
		size int64
	}
	ends := make(chan end, goroutines*each)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n, err := p.AppendPayload(c, "t", "jobs/shared.log", piece(g, i))
				if err != nil {
					errs <- err
					return
				}
				ends <- end{g, i, n}
			}
		})
	}
	wg.Wait()
	close(ends)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, size, err := p.ReadPayload(c, "t", "jobs/shared.log", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	sizes := map[int64]bool{}
	for e := range ends {
		want := piece(e.g, e.i)
		total += int64(len(want))
		if sizes[e.size] {
			t.Errorf("two appends returned size %d", e.size)
		}
		sizes[e.size] = true
		if e.size > int64(len(got)) || e.size < int64(len(want)) || !bytes.Equal(got[e.size-int64(len(want)):e.size], want) {
			t.Errorf("append %d.%d (%d bytes) returned size %d, but the bytes ending there are not it", e.g, e.i, len(want), e.size)
		}
	}
	if size != total || int64(len(got)) != total {
		t.Errorf("after the appends the payload holds %d bytes (size %d), want %d", len(got), size, total)
	}
}

func testPayloadLarge(t *testing.T, s store.Store) {
	p := payloadsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	data := large(LargeSize)
	if err := p.PutPayload(c, "big", "compacted_outputs/big/call_large.json", data); err != nil {
		t.Fatal(err)
	}
	wantPayload(t, p, "big", "compacted_outputs/big/call_large.json", data)
	for _, r := range []struct{ off, limit int64 }{{0, 1}, {1<<20 - 3, 7}, {12345678, 3 << 20}, {LargeSize - 10, 100}} {
		got, size, err := p.ReadPayload(c, "big", "compacted_outputs/big/call_large.json", r.off, r.limit)
		hi := min(r.off+r.limit, LargeSize)
		if err != nil || size != LargeSize || !bytes.Equal(got, data[r.off:hi]) {
			t.Errorf("ReadPayload(%d, %d) = %d bytes, size %d, %v; want bytes %d..%d", r.off, r.limit, len(got), size, err, r.off, hi)
		}
	}
	// A log grown by large and small appends reads back whole.
	var want []byte
	for i := range 12 {
		part := large(64 + (i*2654435761)%(5<<20))
		if i%3 == 1 {
			part = []byte(fmt.Sprintf("small %d\n", i))
		}
		want = append(want, part...)
		if n, err := p.AppendPayload(c, "big", "jobs/big.log", part); err != nil || n != int64(len(want)) {
			t.Fatalf("AppendPayload #%d = %d, %v; want size %d", i, n, err, len(want))
		}
	}
	wantPayload(t, p, "big", "jobs/big.log", want)
}

// job is a job of the suite, every field set.
func job(task, id string, start time.Time) *store.Job {
	return &store.Job{JobID: id, TaskID: task, ToolCallID: "call_" + id, Command: "make -j4 test 2>&1 | tee log",
		Dir: "src/app", State: store.JobRunning, ExitCode: 0, PID: 4242, Owner: "host-a/1234/abcd",
		StartedAt: start, OutputBytes: 10, ReadOffset: 4, Log: "jobs/" + id + ".log",
		Detail: json.RawMessage(`{ "b":1, "a":[2, 3],"esc":"\u00e9" }`)}
}

func diffJob(got, want *store.Job) []string {
	var d []string
	add := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	add("JobID", got.JobID, want.JobID)
	add("TaskID", got.TaskID, want.TaskID)
	add("ToolCallID", got.ToolCallID, want.ToolCallID)
	add("Command", got.Command, want.Command)
	add("Dir", got.Dir, want.Dir)
	add("State", got.State, want.State)
	add("ExitCode", got.ExitCode, want.ExitCode)
	add("PID", got.PID, want.PID)
	add("Owner", got.Owner, want.Owner)
	add("OutputBytes", got.OutputBytes, want.OutputBytes)
	add("ReadOffset", got.ReadOffset, want.ReadOffset)
	add("Log", got.Log, want.Log)
	if !bytes.Equal(got.Detail, want.Detail) || (got.Detail == nil) != (want.Detail == nil) {
		d = append(d, fmt.Sprintf("Detail = %q, want %q (byte for byte)", got.Detail, want.Detail))
	}
	for _, tm := range []struct {
		name string
		g, w time.Time
	}{{"StartedAt", got.StartedAt, want.StartedAt}, {"EndedAt", got.EndedAt, want.EndedAt}} {
		if tm.g.IsZero() != tm.w.IsZero() || tm.g.Sub(tm.w).Abs() >= time.Millisecond {
			d = append(d, fmt.Sprintf("%s = %v, want %v (within 1ms)", tm.name, tm.g, tm.w))
		}
	}
	return d
}

func wantJob(t *testing.T, got, want *store.Job) {
	t.Helper()
	if d := diffJob(got, want); len(d) > 0 {
		t.Errorf("job %s differs:\n  %s", want.JobID, strings.Join(d, "\n  "))
	}
}

func jobIDs(js []*store.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.JobID
	}
	return out
}

func testJobs(t *testing.T, s store.Store) {
	js := jobsOf(t, s)
	defer closeStore(t, s)
	c := ctx(t)
	if _, err := js.GetJob(c, "nope"); !errors.Is(err, store.ErrNoJob) {
		t.Errorf("GetJob(unknown) = %v, want an error wrapping ErrNoJob", err)
	}
	if l, err := js.ListJobs(c, ""); err != nil || len(l) != 0 {
		t.Errorf("ListJobs on an empty store = %v, %v", jobIDs(l), err)
	}
	j1 := job("t1", "j1", base.Add(2*time.Second))
	j2 := job("t1", "j2", base)
	j3 := job("t2", "j3", base.Add(time.Second))
	j3.Detail = nil
	for _, j := range []*store.Job{j1, j2, j3} {
		if err := js.PutJob(c, j); err != nil {
			t.Fatal(err)
		}
	}
	j1.Command = "changed after Put" // the store keeps its own copy
	j1 = job("t1", "j1", base.Add(2*time.Second))
	for _, j := range []*store.Job{j1, j2, j3} {
		got, err := js.GetJob(c, j.JobID)
		if err != nil {
			t.Fatal(err)
		}
		wantJob(t, got, j)
	}
	if l, err := js.ListJobs(c, "t1"); err != nil || !slices.Equal(jobIDs(l), []string{"j2", "j1"}) {
		t.Errorf("ListJobs(t1) = %v, %v; want [j2 j1] (oldest StartedAt first)", jobIDs(l), err)
	}
	if l, err := js.ListJobs(c, ""); err != nil || !slices.Equal(jobIDs(l), []string{"j2", "j3", "j1"}) {
		t.Errorf("ListJobs(\"\") = %v, %v; want [j2 j3 j1]", jobIDs(l), err)
	}
	if l, err := js.ListJobs(c, "t9"); err != nil || len(l) != 0 {
		t.Errorf("ListJobs(unknown task) = %v, %v; want empty", jobIDs(l), err)
	}
	// A job ends: PutJob replaces the whole job.
	end := *j2
	end.State, end.ExitCode, end.EndedAt, end.OutputBytes, end.ReadOffset = store.JobExited, 2, base.Add(time.Minute), 1<<40, 1<<39
	end.Detail = json.RawMessage(`[]`)
	if err := js.PutJob(c, &end); err != nil {
		t.Fatal(err)
	}
	got, err := js.GetJob(c, "j2")
	if err != nil {
		t.Fatal(err)
	}
	wantJob(t, got, &end)
	lost := *j1
	lost.State, lost.ExitCode, lost.Owner = store.JobLost, -1, ""
	if err := js.PutJob(c, &lost); err != nil {
		t.Fatal(err)
	}
	if l, err := js.ListJobs(c, "t1"); err != nil || len(l) != 2 {
		t.Fatalf("ListJobs(t1) after replacing = %v, %v", jobIDs(l), err)
	} else {
		wantJob(t, l[0], &end)
		wantJob(t, l[1], &lost)
	}
	for _, bad := range []*store.Job{nil, {TaskID: "t"}, {JobID: "x"}} {
		if err := js.PutJob(c, bad); err == nil {
			t.Errorf("PutJob(%+v) succeeded", bad)
		}
	}
}

func testPrunePayloadsJobs(t *testing.T, s store.Store) {
	defer closeStore(t, s)
	pr, ok := s.(store.Pruner)
	p, okP := s.(store.Payloads)
	js, okJ := s.(store.Jobs)
	if !ok || !okP || !okJ {
		t.Skip("the store lacks store.Pruner, store.Payloads or store.Jobs")
	}
	c := ctx(t)
	now := time.Now()
	old := now.Add(-40 * 24 * time.Hour)
	for _, task := range []struct {
		id    string
		start time.Time
	}{{"old", old}, {"new", now}} {
		r := rec(task.id, task.id+"-call")
		r.StartedAt, r.EndedAt = task.start, task.start.Add(time.Second)
		mustPut(t, s, r)
		if err := p.PutPayload(c, task.id, "compacted_outputs/"+task.id+"/c.json", []byte(`{"raw":1}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendPayload(c, task.id, "jobs/"+task.id+".log", []byte("log line\n")); err != nil {
			t.Fatal(err)
		}
		if err := js.PutJob(c, job(task.id, task.id+"-job", task.start)); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := pr.PruneBefore(c, now.Add(-30*24*time.Hour))
	if err != nil || !slices.Equal(gone, []string{"old"}) {
		t.Fatalf("PruneBefore = %v, %v; want [old]", gone, err)
	}
	for _, name := range []string{"compacted_outputs/old/c.json", "jobs/old.log"} {
		if _, _, err := p.ReadPayload(c, "old", name, 0, 0); !errors.Is(err, store.ErrNoPayload) {
			t.Errorf("payload %s of a pruned task: %v, want ErrNoPayload", name, err)
		}
	}
	if _, err := js.GetJob(c, "old-job"); !errors.Is(err, store.ErrNoJob) {
		t.Errorf("job of a pruned task: %v, want ErrNoJob", err)
	}
	wantPayload(t, p, "new", "compacted_outputs/new/c.json", []byte(`{"raw":1}`))
	wantPayload(t, p, "new", "jobs/new.log", []byte("log line\n"))
	if l, err := js.ListJobs(c, ""); err != nil || !slices.Equal(jobIDs(l), []string{"new-job"}) {
		t.Errorf("jobs after the prune = %v, %v; want [new-job]", jobIDs(l), err)
	}
}
