package coretools

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// ServiceOutputPayloads is the service under which a run injects a
// store.Payloads that execute copies each call's full output into
// (store.OutputPayloadName, in the call's task), so view_tool_call can
// read it from any process that reaches the store. The aibuddy program
// injects it when the store is shared (PostgreSQL): with the SQLite file
// every process that reaches the store also reaches the data folder's
// file, so no copy is made.
const ServiceOutputPayloads = "outputPayloads"

// payloadPiece is how much of the full output file one store write
// carries, in bytes.
const payloadPiece = 4 << 20

// withPayloads returns ex with Payloads taken from the run's services
// (ServiceOutputPayloads), when they hold one.
func withPayloads(ex *ExecuteOptions, env registry.Env) *ExecuteOptions {
	p, ok := env.Services[ServiceOutputPayloads].(store.Payloads)
	if !ok {
		return ex
	}
	var c ExecuteOptions
	if ex != nil {
		c = *ex
	}
	c.Payloads = p
	return &c
}

// copyToPayloads copies the call's full output file at path into the
// store's payload (task, store.OutputPayloadName(callID)): a Put of the
// first piece, then appends. It returns a note for the result when the
// copy failed (the local file stays either way), "" when it succeeded or
// there is nothing to copy.
func (e *executor) copyToPayloads(ctx context.Context, callID, path string) string {
	p := e.opts.Payloads
	task := tool.TaskID(ctx)
	if p == nil || path == "" || task == "" || callID == "" {
		return ""
	}
	// The call may have been stopped: the copy still runs, bounded by
	// the store's own timeouts, so what was produced stays recoverable.
	ctx = context.WithoutCancel(ctx)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("the full output was not copied into the store: %v", err)
	}
	defer f.Close()
	name := store.OutputPayloadName(callID)
	buf := make([]byte, payloadPiece)
	for first := true; ; first = false {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 || first {
			var werr error
			if first {
				werr = p.PutPayload(ctx, task, name, buf[:n])
			} else {
				_, werr = p.AppendPayload(ctx, task, name, buf[:n])
			}
			if werr != nil {
				return fmt.Sprintf("the full output was not copied into the store (other processes cannot view it; the local file has it): %v", werr)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return ""
		}
		if rerr != nil {
			return fmt.Sprintf("the full output was copied into the store only in part: %v", rerr)
		}
	}
}

// keptFile is the full output file's path, "" when none is kept. Call it
// after finish.
func (c *outputCap) keptFile() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.filePath
}
