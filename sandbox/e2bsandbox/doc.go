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
//
// Re-attach: when the server stream of a command's Process.Start ends
// with an error before its end event (a connection reset, a proxy drop,
// an HTTP/2 stream reset) and Exec did not cancel it itself, Exec calls
// Process.Connect with ProcessSelector.pid (the start event's pid), up
// to Options.ReattachRetries times (default 5; sandbox.e2b.reattachRetries)
// with a wait of Options.ReattachBackoff (default 100 ms;
// sandbox.e2b.reattachBackoff) doubled before each further attempt, and
// counted again after each successful re-attach. envd's Connect (envd
// packages/envd/internal/services/process/connect.go) sends a start event
// with the pid, then only the data events produced after it subscribed
// (it forks the live output channel; it does not replay buffered output,
// and output written while no stream is attached is dropped, handler.go
// checks HasSubscribers), keepalives, and the end event (current envd
// also serves the end of a process that ended within its 30 s
// terminatedRetentionTTL). So Exec keeps a spool: the supervisor's stdout
// and stderr are also copied (tee) into a folder in the sandbox's /tmp,
// removed when Exec returns; after a re-attach Exec ignores Connect's
// data events and, at the end event, writes the output from the byte
// offsets it had delivered on (tail -c +N), so the caller's writers get
// every byte once, in order per stream (the interleaving of stdout and
// stderr after the break is not kept). Timeouts run from the original
// start; a timeout or cancellation while no stream is attached kills the
// group at once (SendSignal SIGKILL to the pid, kill -KILL -- -PID). A
// process envd no longer knows (Connect: CodeNotFound, it ended while
// detached) gives an Execution error saying the exit status is unknown,
// after its output is delivered from the spool; retries used up kill the
// group and say so. ReattachRetries -1 turns re-attach and the spool off
// (a break then kills the command, as before).
package e2bsandbox
