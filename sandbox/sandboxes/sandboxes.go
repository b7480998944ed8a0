package sandboxes

import (
	"fmt"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// Options configures New.
type Options struct {
	// Workspace is the root folder (local) or remote workspace id.
	Workspace string
	// Local configures the local adapter; nil means its defaults.
	Local *localsandbox.Options
}

// New creates a sandbox of the given kind.
//
// Errors: sandbox.ErrUnavailable for daytona and e2b (their adapters are
// placeholders), sandbox.ErrUnknownKind for a name not in sandbox.Kinds, and
// the adapter's own error when it cannot open the workspace.
func New(kind sandbox.Kind, opts Options) (sandbox.Sandbox, error) {
	switch kind {
	case sandbox.KindLocal, "":
		return localsandbox.New(opts.Workspace, opts.Local)
	case sandbox.KindDaytona, sandbox.KindE2B:
		return nil, fmt.Errorf("sandbox %q: %w: no adapter is deployed in this build; use kind %q",
			kind, sandbox.ErrUnavailable, sandbox.KindLocal)
	default:
		return nil, fmt.Errorf("sandbox %q: %w (known: local, daytona, e2b)", kind, sandbox.ErrUnknownKind)
	}
}
