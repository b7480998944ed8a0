//go:build linux

package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aibuddy/aibuddy/jobs"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// A background job is started, its output read as it comes (each read
// returns what is new), and its process tree stopped.
func ExampleRunner() {
	ws, _ := os.MkdirTemp("", "example-ws-")
	data, _ := os.MkdirTemp("", "example-data-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(data)
	sb, _ := localsandbox.New(ws, &localsandbox.Options{NoTempSweep: true, Confinement: &confine.Settings{Confinement: "off"}})
	defer sb.Close()
	st, _ := sqlitestore.Open(filepath.Join(data, "records.db"), nil)
	defer st.Close()
	r, err := jobs.New(sb, st, &jobs.Options{LogDir: filepath.Join(data, "jobs")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	ctx := context.Background()

	job, _ := r.Start(ctx, jobs.StartRequest{TaskID: "session-1", Command: "echo serving; sleep 0.2; echo ready; sleep 100000"})
	fmt.Println(job.State, job.PID > 0)

	var got bytes.Buffer
	for !bytes.Contains(got.Bytes(), []byte("ready\n")) {
		// Each read starts where the last one stopped; wait for news.
		if _, err := r.Read(ctx, jobs.ReadRequest{JobID: job.ID, Wait: 5 * time.Second}, func(b []byte) { got.Write(b) }); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Print(got.String())

	k, _ := r.Kill(ctx, job.ID)
	fmt.Println(k.State, k.Reason, len(k.Left))
	// Output:
	// running true
	// serving
	// ready
	// killed job_kill 0
}
