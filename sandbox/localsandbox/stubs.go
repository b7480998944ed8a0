package localsandbox

import (
	"context"

	"github.com/aibuddy/aibuddy/sandbox"
)

// TEMPORARY: replaced file by file (list.go, read.go, write.go, edit.go,
// search.go, exec.go). Delete a stub when its real method lands.

func (s *Sandbox) List(ctx context.Context, req sandbox.ListRequest) (*sandbox.ListResult, error) {
	return nil, sandbox.ErrUnsupported
}

func (s *Sandbox) Read(ctx context.Context, req sandbox.ReadRequest) (*sandbox.ReadResult, error) {
	return nil, sandbox.ErrUnsupported
}

func (s *Sandbox) Write(ctx context.Context, req sandbox.WriteRequest) (*sandbox.WriteResult, error) {
	return nil, sandbox.ErrUnsupported
}

func (s *Sandbox) Edit(ctx context.Context, req sandbox.EditRequest) (*sandbox.EditResult, error) {
	return nil, sandbox.ErrUnsupported
}

func (s *Sandbox) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	return nil, sandbox.ErrUnsupported
}
