package localsandbox

import (
	"context"

	"github.com/aibuddy/aibuddy/sandbox"
)

// TEMPORARY: replaced file by file (list.go, read.go, write.go, edit.go,
// search.go, exec.go). Delete a stub when its real method lands.

func (s *Sandbox) Search(ctx context.Context, req sandbox.SearchRequest) (*sandbox.SearchResult, error) {
	return nil, sandbox.ErrUnsupported
}
