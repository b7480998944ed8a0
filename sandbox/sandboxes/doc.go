// Package sandboxes is the seed's createSandbox: it maps a sandbox.Kind to an
// adapter. local opens a localsandbox; e2b opens an e2bsandbox on an
// existing envd or creates the sandbox through the E2B API; daytona is a
// known kind without an adapter and returns sandbox.ErrUnavailable (never a
// fallback to local); any other name returns sandbox.ErrUnknownKind.
package sandboxes
