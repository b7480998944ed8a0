// Package sandbox is the execution plane's host boundary (the seed's ISandbox
// and createSandbox): one interface for listing, reading, writing, editing,
// searching and running commands inside a workspace, where every operation
// takes a context.Context that stops it (the seed's AbortSignal).
//
// The interface is the contract; adapters live in sub-packages
// (localsandbox for the local host, e2bsandbox for a remote sandbox over
// E2B's envd protocol), package sandboxes maps a [Kind] to an adapter, and
// package sandboxtest is the conformance suite every adapter passes. The
// kind daytona is known but has no adapter: asking for it returns
// [ErrUnavailable], never a silent fallback to local (seed: "Presence in a
// type union is not a claim of deployed support").
//
// Paths in requests are slash-separated and relative to the workspace root;
// an absolute path is accepted only when it names a place inside the
// workspace. Anything that resolves outside, through "..", an absolute path
// or a symlink, fails with an error wrapping [ErrOutsideWorkspace], and
// nothing outside is read, written or created.
//
// A request's [Deny] rule is applied by the adapter to the real path of
// the object it actually opened (and to every entry a walk meets), never
// only to the name asked for; a FIFO, socket or device is refused without
// blocking (ErrSpecialFile); a path deeper than the adapter resolves fails
// with ErrTooDeep.
//
// Bounds are applied at the source: every request carries its limits and
// every result says when a limit was hit (Truncated) or a deadline stopped a
// walk early (Partial), so a caller never has to hold more than it asked for.
package sandbox
