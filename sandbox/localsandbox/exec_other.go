//go:build !unix

package localsandbox

import (
	"context"
	"fmt"

	"github.com/aibuddy/aibuddy/sandbox"
)

func (s *Sandbox) run(ctx context.Context, req sandbox.ExecRequest, spec runSpec) (*sandbox.ExecResult, error) {
	return nil, fmt.Errorf("localsandbox: exec needs process groups (unix): %w", sandbox.ErrUnsupported)
}
