package coretools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// fsFake is a sandbox.Sandbox whose file operations are functions set
// by each test; it records the requests it was given. Unset operations
// return sandbox.ErrUnsupported.
type fsFake struct {
	workspace string
	list      func(context.Context, sandbox.ListRequest) (*sandbox.ListResult, error)
	read      func(context.Context, sandbox.ReadRequest) (*sandbox.ReadResult, error)
	write     func(context.Context, sandbox.WriteRequest) (*sandbox.WriteResult, error)
	edit      func(context.Context, sandbox.EditRequest) (*sandbox.EditResult, error)
	search    func(context.Context, sandbox.SearchRequest) (*sandbox.SearchResult, error)

	edits    []sandbox.EditRequest
	reads    []sandbox.ReadRequest
	searches []sandbox.SearchRequest
}

var _ sandbox.Sandbox = (*fsFake)(nil)

func (f *fsFake) Kind() sandbox.Kind          { return "fake" }
func (f *fsFake) Workspace() string           { return f.workspace }
func (f *fsFake) Supports(op sandbox.Op) bool { return true }
func (f *fsFake) Close() error                { return nil }

func (f *fsFake) List(ctx context.Context, req sandbox.ListRequest) (*sandbox.ListResult, error) {
	if f.list == nil {
		return nil, sandbox.ErrUnsupported
	}
	return f.list(ctx, req)
}

func (f *fsFake) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	f.reads = append(f.reads, req)
	if f.read == nil {
		return nil, sandbox.ErrUnsupported
	}
	return f.read(ctx, req)
}

func (f *fsFake) Write(ctx context.Context, req sandbox.WriteRequest) (*sandbox.WriteResult, error) {
	if f.write == nil {
		return nil, sandbox.ErrUnsupported
	}
	return f.write(ctx, req)
}

func (f *fsFake) Edit(ctx context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
	f.edits = append(f.edits, req)
	if f.edit == nil {
		return nil, sandbox.ErrUnsupported
	}
	return f.edit(ctx, req)
}

func (f *fsFake) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	f.searches = append(f.searches, req)
	if f.search == nil {
		return nil, sandbox.ErrUnsupported
	}
	return f.search(ctx, req)
}

func (f *fsFake) Exec(ctx context.Context, req sandbox.ExecRequest) (*sandbox.ExecResult, error) {
	return nil, sandbox.ErrUnsupported
}

// fsToolsByName builds the group over sb and indexes it by name.
func fsToolsByName(t *testing.T, sb sandbox.Sandbox, opts *FSOptions) map[string]*tool.Tool {
	t.Helper()
	m := map[string]*tool.Tool{}
	for _, tl := range Filesystem(sb, opts) {
		m[tl.Name()] = tl
	}
	return m
}

// fsCall runs tools[name] with args marshalled as the JSON input.
func fsCall(t *testing.T, tools map[string]*tool.Tool, name string, args any) *tool.Result {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(context.Background(), &tool.Call{ID: "t1", Name: name, Input: raw})
}

// fsMustOK fails the test when r is an error result.
func fsMustOK(t *testing.T, r *tool.Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result (stage %s): %s", r.Stage, r.AllText())
	}
	return r.AllText()
}

// fsMustFail fails the test unless r is an error result at stage.
func fsMustFail(t *testing.T, r *tool.Result, stage tool.Stage) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result at stage %s, got success: %s", stage, r.AllText())
	}
	if r.Stage != stage {
		t.Fatalf("stage = %s, want %s; text: %s", r.Stage, stage, r.AllText())
	}
	return r.AllText()
}
