// Package sandboxes is the seed's createSandbox: it maps a sandbox.Kind to an
// adapter. local opens a localsandbox; daytona and e2b are known kinds
// without an adapter and return sandbox.ErrUnavailable (never a fallback to
// local); any other name returns sandbox.ErrUnknownKind.
package sandboxes
