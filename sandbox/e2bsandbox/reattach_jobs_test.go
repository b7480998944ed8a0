package e2bsandbox_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxenvd"
	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// A background job is one Exec (jobs.Runner.Start runs the sandbox's
// Exec under the job's context), so it survives a cut of its stream the
// same way: the job's log holds the whole output once and its record the
// exit code.
func TestReattachBackgroundJob(t *testing.T) {
	c := &cutter{n: 1}
	s, srv := openWith(t, t.TempDir(), fxenvd.Options{Cut: c.cut, RetainExited: time.Minute}, e2bsandbox.Options{})
	data := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := jobs.New(s, st, &jobs.Options{LogDir: filepath.Join(data, "jobs"), MaxOutputBytes: 8 << 20, MaxTotalBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	info, err := r.Start(context.Background(), jobs.StartRequest{TaskID: "t", ToolCallID: "call-t", Command: "seq 1 100000; exit 4"})
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	var o *jobs.Output
	for o == nil || o.Running() { // each read waits for news (or the end)
		if o, err = r.Read(context.Background(), jobs.ReadRequest{JobID: info.ID, Wait: 10 * time.Second}, func(b []byte) { all.Write(b) }); err != nil {
			t.Fatal(err)
		}
	}
	if c.count() != 1 || srv.Connects() != 1 {
		t.Fatalf("%d cuts, %d Connect calls, want 1 of each", c.count(), srv.Connects())
	}
	if o.State != store.JobExited || o.ExitCode != 4 {
		t.Fatalf("job state %s exit %d (reason %q), want exited 4", o.State, o.ExitCode, o.Reason)
	}
	if want := seqOutput(t, "1", "100000"); !bytes.Equal(all.Bytes(), want) {
		t.Fatalf("job output %d bytes, want the %d of seq 1 100000 (first difference at %d)", all.Len(), len(want), firstDiff(all.Bytes(), want))
	}
}
