// Package e2bsandbox is the sandbox.Sandbox adapter of kind "e2b": one
// workspace inside a remote sandbox reached through E2B's in-sandbox
// daemon, envd, over its public protocol (github.com/e2b-dev/infra,
// packages/envd/spec: Connect-RPC services process.Process and
// filesystem.Filesystem, HTTP /files and /health, the X-Access-Token
// header). It talks to any envd: E2B cloud, self-hosted E2B, a Kubernetes
// agent-sandbox pod, a tunnel. [NewAPI] also creates the sandbox through
// the E2B control-plane API (POST /sandboxes), keeps it alive while in
// use and kills it on Close.
//
// Every operation takes its context into the HTTP requests it makes, and a
// command stopped by timeout or cancellation is stopped in the sandbox
// (its whole process group, SIGTERM then SIGKILL), not only abandoned.
// Paths are resolved inside the sandbox, component by component through
// Filesystem.Stat, so ".." and symlinks leading outside the workspace are
// refused there. Read, Edit and Search fetch the bytes they need through
// /files and apply the same text rules as package localsandbox, on a
// private local copy that lives for one call.
package e2bsandbox
