package compact

import (
	"context"
	"io"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// payloadOutput is the source of a call's full command output kept in the
// store (store.OutputPayloadName in the record's task; execute copies it
// there when the store is shared), for a result that names a full output
// file (its evidence) that this process cannot read: the call ran in
// another process, on another machine. Reads are ranged: only the bytes a
// view needs are fetched.
func payloadOutput(ctx context.Context, st store.Store, rec *store.Record, w result.Wire) (viewSource, bool) {
	p, ok := st.(store.Payloads)
	if !ok {
		return viewSource{}, false
	}
	if path, _ := w.Evidence[tool.EvidenceFullOutputPath].(string); path == "" {
		return viewSource{}, false
	}
	name := store.OutputPayloadName(rec.ToolCallID)
	_, size, err := p.ReadPayload(ctx, rec.TaskID, name, 0, 1)
	if err != nil {
		return viewSource{}, false
	}
	return viewSource{r: &payloadReader{ctx: ctx, p: p, task: rec.TaskID, name: name, size: size}, n: size, stored: true}, true
}

// payloadReader is an io.ReaderAt over one payload.
type payloadReader struct {
	ctx        context.Context
	p          store.Payloads
	task, name string
	size       int64
}

func (r *payloadReader) ReadAt(b []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	data, _, err := r.p.ReadPayload(r.ctx, r.task, r.name, off, int64(len(b)))
	n := copy(b, data)
	if err != nil {
		return n, err
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}
