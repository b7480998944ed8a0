//go:build unix && !linux

package localsandbox

import (
	"context"
	"os"

	"github.com/aibuddy/aibuddy/sandbox"
)

// startProc starts the command directly (there is no confinement driver
// here; Exec refused a confined policy before).
func (s *Sandbox) startProc(ctx context.Context, req sandbox.ExecRequest, spec runSpec, outW, errW *os.File) (execProc, error) {
	return s.startPlain(req, spec, outW, errW)
}
