package sandboxes

import (
	"context"
	"fmt"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/e2bsandbox"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
)

// Options configures New.
type Options struct {
	// Workspace is the root folder (local) or the absolute workspace path
	// inside the remote sandbox (e2b).
	Workspace string
	// Local configures the local adapter; nil means its defaults.
	Local *localsandbox.Options
	// E2B configures the e2b adapter; its Workspace is Workspace when
	// empty. With E2B.EnvdURL set, New opens that sandbox; otherwise
	// E2BAPI (with its APIKey) creates one.
	E2B    *e2bsandbox.Options
	E2BAPI *e2bsandbox.APIOptions
	// Context bounds opening a remote sandbox; nil means
	// context.Background (each request still has its own timeout).
	Context context.Context
}

// New creates a sandbox of the given kind.
//
// Errors: sandbox.ErrUnavailable for daytona (no adapter in this build)
// and for e2b configured with neither an envd URL nor an API key,
// sandbox.ErrUnknownKind for a name not in sandbox.Kinds, and the
// adapter's own error when it cannot open the workspace.
func New(kind sandbox.Kind, opts Options) (sandbox.Sandbox, error) {
	switch kind {
	case sandbox.KindLocal, "":
		return localsandbox.New(opts.Workspace, opts.Local)
	case sandbox.KindE2B:
		return openE2B(opts)
	case sandbox.KindDaytona:
		return nil, fmt.Errorf("sandbox %q: %w: no adapter is deployed in this build; use kind %q or %q",
			kind, sandbox.ErrUnavailable, sandbox.KindLocal, sandbox.KindE2B)
	default:
		return nil, fmt.Errorf("sandbox %q: %w (known: local, daytona, e2b)", kind, sandbox.ErrUnknownKind)
	}
}

func openE2B(opts Options) (sandbox.Sandbox, error) {
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var o e2bsandbox.Options
	if opts.E2B != nil {
		o = *opts.E2B
	}
	if o.Workspace == "" {
		o.Workspace = opts.Workspace
	}
	switch {
	case o.EnvdURL != "":
		return e2bsandbox.New(ctx, o)
	case opts.E2BAPI != nil && opts.E2BAPI.APIKey != "":
		return e2bsandbox.NewAPI(ctx, *opts.E2BAPI, o)
	}
	return nil, fmt.Errorf("sandbox \"e2b\": %w: Discovery: no sandbox to reach: set sandbox.e2b.envdURL (an existing sandbox's envd) or E2B_API_KEY (the E2B API creates one from sandbox.e2b.template)", sandbox.ErrUnavailable)
}
