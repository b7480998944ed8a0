package coretools

import (
	"context"
	"fmt"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// writeInput is the input of write_file.
type writeInput struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

const writeSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to create or replace, relative to the workspace root. Missing parent directories inside the workspace are created."},
    "content": {"type": "string", "description": "The complete new content of the file, written byte for byte (no line-ending or Unicode normalization)."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

func (f *fsTools) writeFileTool() *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name:        "write_file",
		Description: f.description("write_file"),
		InputSchema: []byte(writeSchema),
		Annotations: fsDestructive("Write file"),
		Handler:     fsShownPaths(f.writeFile),
		Verify:      verifyWrite,
		Access:      tool.PathAccess(tool.AccessEdit, "path"),
	})
}

// writeFile writes the content atomically through the sandbox and answers
// with the evidence read back from disk: "wrote N bytes to P (created);
// sha256 H read back from disk", Evidence {bytes, sha256, created}. The
// digest becomes this run's last-seen digest for the path, so a following
// edit_file needs no re-read.
func (f *fsTools) writeFile(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	in, err := tool.Decode[writeInput](call)
	if err != nil {
		return nil, err
	}
	in.Path = fsPathArg(in.Path) // a name as ls, glob and grep print it (pathquote.go)
	if err := f.checkDenied("write_file", in.Path); err != nil {
		return nil, err
	}
	res, err := f.sb.Write(ctx, sandbox.WriteRequest{Path: in.Path, Content: []byte(in.Content), Deny: f.deny(true)})
	if err != nil {
		return nil, fsError(err, "write_file", in.Path)
	}
	f.remember(res.SHA256, in.Path, res.Path)
	how := "replaced"
	if res.Created {
		how = "created"
	}
	text := fmt.Sprintf("wrote %s to %s (%s); sha256 %s read back from disk",
		fsPlural(int(res.Bytes), "byte", "bytes"), in.Path, how, res.SHA256)
	if sent := int64(len(in.Content)); res.Bytes != sent {
		return nil, tool.Errorf(tool.Verification, "%s; but %s were sent", text, fsPlural(int(sent), "byte", "bytes")).
			WithHint("read the file to see what is on disk before writing again")
	}
	return tool.TextWith(text, tool.Evidence{
		tool.EvidencePath:    in.Path,
		tool.EvidenceBytes:   res.Bytes,
		tool.EvidenceSHA256:  res.SHA256,
		tool.EvidenceCreated: res.Created,
	}), nil
}
