package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// OffloadDir is the folder under the data folder that holds offloaded
// calls (seed: "compacted_outputs/<taskId>/<toolCallId>.json").
const OffloadDir = "compacted_outputs"

// Offloaded is the content of one offload file: the raw input and output
// of a call, enough to recover it without the store.
type Offloaded struct {
	ToolCallID string          `json:"toolCallId"`
	TaskID     string          `json:"taskId"`
	Tool       string          `json:"tool"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Stage      string          `json:"stage,omitempty"`
	Outcome    store.Outcome   `json:"outcome"`
	StartedAt  time.Time       `json:"startedAt"`
	EndedAt    time.Time       `json:"endedAt"`
}

// OffloadPath is the pointer of a call: the slash-separated path of its
// offload file relative to the data folder,
// compacted_outputs/<taskId>/<toolCallId>.json. Ids are made safe as file
// names: characters outside [A-Za-z0-9._-] become '_', names that are
// empty, start with '.', or had to change get a suffix of 8 hex digits of
// their SHA-256, so distinct ids never share a file and no id escapes the
// folder.
func OffloadPath(taskID, toolCallID string) string {
	return OffloadDir + "/" + tool.SafeFileName(taskID) + "/" + tool.SafeFileName(toolCallID) + ".json"
}

// writeOffload keeps rec's raw input and output under pointer: as the
// payload (rec.TaskID, pointer) when st implements [store.Payloads] (so any
// process that reaches the store can read it; PutPayload is atomic),
// else in the file dataDir/pointer, written atomically: a temporary file
// in the same folder, fsync, rename, fsync of the folder. A crash leaves
// the old file, the new file, or a stray temporary file, never a torn one.
func writeOffload(ctx context.Context, st store.Store, dataDir, pointer string, rec *store.Record) error {
	off := Offloaded{ToolCallID: rec.ToolCallID, TaskID: rec.TaskID, Tool: rec.Tool,
		Input: rec.Input, Output: rec.Output, Stage: rec.Stage, Outcome: rec.Outcome,
		StartedAt: rec.StartedAt, EndedAt: rec.EndedAt}
	if len(off.Output) == 0 {
		off.Output = json.RawMessage("null")
	}
	if len(off.Input) == 0 {
		off.Input = json.RawMessage("{}")
	}
	data, err := json.Marshal(off)
	if err != nil {
		return fmt.Errorf("compact: encode offload of %s: %w", rec.ToolCallID, err)
	}
	if p, ok := st.(store.Payloads); ok {
		if err := p.PutPayload(ctx, rec.TaskID, pointer, data); err != nil {
			return fmt.Errorf("compact: offload of %s into the store: %w", rec.ToolCallID, err)
		}
		return nil
	}
	return writeAtomic(filepath.Join(dataDir, filepath.FromSlash(pointer)), data)
}

func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("compact: offload folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("compact: offload: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("compact: offload write: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("compact: offload fsync: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("compact: offload close: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("compact: offload rename: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable
		d.Close()
	}
	return nil
}

// LoadOffload reads the offload of the task's call that pointer names:
// the store's payload (taskID, pointer) when st implements
// [store.Payloads] and holds it, else the file under dataDir (see
// [ReadOffload]; offloads written by builds before payloads, or with a
// store without them). Errors name the pointer.
func LoadOffload(ctx context.Context, st store.Store, dataDir, taskID, pointer string) (*Offloaded, error) {
	if p, ok := st.(store.Payloads); ok {
		data, _, err := p.ReadPayload(ctx, taskID, pointer, 0, 0)
		switch {
		case err == nil:
			var off Offloaded
			if err := json.Unmarshal(data, &off); err != nil {
				return nil, fmt.Errorf("compact: decode offload %s: %w", pointer, err)
			}
			return &off, nil
		case !errors.Is(err, store.ErrNoPayload):
			return nil, fmt.Errorf("compact: read offload %s from the store: %w", pointer, err)
		}
	}
	return ReadOffload(dataDir, pointer)
}

// ReadOffload reads the offload file a pointer names under dataDir. The
// pointer must be relative and stay inside dataDir/compacted_outputs.
func ReadOffload(dataDir, pointer string) (*Offloaded, error) {
	clean := filepath.Clean(filepath.FromSlash(pointer))
	if filepath.IsAbs(clean) || !strings.HasPrefix(clean, OffloadDir+string(filepath.Separator)) {
		return nil, fmt.Errorf("compact: pointer %q is not inside %s", pointer, OffloadDir)
	}
	data, err := os.ReadFile(filepath.Join(dataDir, clean))
	if err != nil {
		return nil, fmt.Errorf("compact: read offload: %w", err)
	}
	var off Offloaded
	if err := json.Unmarshal(data, &off); err != nil {
		return nil, fmt.Errorf("compact: decode offload %s: %w", pointer, err)
	}
	return &off, nil
}
