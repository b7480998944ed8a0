// Package mcpclient connects aibuddy to external MCP servers and turns the
// tools they offer into ordinary [tool.Tool] values: one job, from a
// "mcpServers" configuration to callable, namespaced tools.
//
// It covers the MCP Integration part of the seed (tools-and-execution.md,
// "The registry defines contracts; each run defines capability") and the
// field cases BH-031..BH-043 (shared/cases/5-mcp-schemas.md):
//
//   - Configuration: [ParseServers] reads the Claude Desktop / Claude Code /
//     Cursor "mcpServers" object strictly, with ${VAR} and ${VAR:-default}
//     expansion from the host environment as Claude Code does.
//   - Connections: [Connect] (or [Start]) opens every server in parallel with
//     the official Go SDK (github.com/modelcontextprotocol/go-sdk): stdio
//     (our own process handling: own process group, stderr drained into a
//     bounded ring, early exit noticed at once), streamable HTTP and legacy
//     SSE. Every handshake is bounded by Options.InitTimeout; a server that
//     crashes, hangs or writes garbage is marked failed with its reason while
//     the others keep working (BH-041, BH-042).
//   - Names: every tool is exposed as <server>__<tool>, sanitized to
//     ^[a-zA-Z0-9_-]{1,64}$ with a short stable hash when too long or when
//     two names sanitize alike; calls are routed back to the original MCP
//     name; a collision that cannot be disambiguated is an [ErrNameCollision]
//     (BH-039).
//   - Schemas: each tool goes through [tool.Define] on its own; a tool whose
//     schema cannot be used is quarantined with a reason naming server and
//     tool while its siblings load; safe, meaning-preserving repairs are
//     applied and recorded (BH-031, BH-033, BH-034, BH-037). Intake checks
//     each schema structurally in one linear pass ([tool.CheckSchema]:
//     depth bound, top-level type, local references, reference cycles,
//     keyword shapes); the compiler runs when a tool is first activated or
//     called ([tool.Spec.CompileOnUse]), and a schema it rejects then is
//     quarantined too (issue 10: thousands of deferred tools compiled at
//     start-up took seconds). [Options.CompileSchemas] compiles at intake.
//   - Changes: notifications/tools/list_changed re-fetches the server's
//     tools once per burst (debounced) and notifies subscribers; a
//     disconnect removes the server's tools with the reason (BH-043).
//   - Hostile peers: every inbound message passes a byte-stream filter
//     before the SDK decodes it (stdio stdout, HTTP JSON bodies and
//     event-stream data lines). Notifications over
//     [Options.NotificationsPerSecond] are dropped and counted
//     ([ServerStatus].NotificationsDropped), a dropped list_changed still
//     leading to one refresh; a message nested deeper than the SDK reads
//     (1,000 levels) loses only the tool that is too deep (quarantined) or
//     becomes an error for its call, instead of closing the connection.
//   - Calls: a tool's handler sends tools/call with the original name and
//     the already validated arguments; [Manager.Call] routes by name and
//     answers at once, at the Execution stage, for a server that is not
//     connected. Server isError results become Execution-stage errors;
//     ctx cancellation reaches the server as notifications/cancelled.
//   - Expectations: [Manager.Expected] says which servers are still
//     connecting and how many tools each is expected to bring (its count
//     from the last start, kept with [WriteToolCounts] in the data folder's
//     [ToolCountsFile], else an assumed count), so the count gates decide
//     on what is configured rather than on who answered first.
//   - Protocol versions: the SDK negotiates; aibuddy offers the newest
//     ([ProtocolVersions]: 2026-07-28 through server/discover, else
//     2025-11-25 down to 2024-11-05 through initialize) or
//     Options.ProtocolVersion (mcp.protocolVersion), each server settling
//     on the newest it shares; [ServerStatus].Protocol says which.
//   - Questions for the user (mrtr.go, BH-069): with Options.Elicit set,
//     form elicitation is advertised (URL mode never: no browser flow).
//     An input-required tools/call reply (2026-07-28 multi round-trip
//     requests) has each form put to the Elicitor and the call sent again
//     with the answers and the server's exact requestState, at most
//     Options.MaxInputRounds (mcp.maxInputRounds, default 4) times; a
//     classic elicitation/create goes to the same Elicitor, tied to the
//     one call in flight. Decline is an answer (the server's result ends
//     the call); a requestState the server refuses is its error; the
//     answers are added to the result in the user's name and never sent
//     with another call. [FormElicitor] asks on a terminal; without an
//     Elicitor nothing is advertised and a server that asks anyway gets
//     an Authorization-stage error, never a made-up answer.
//   - OAuth 2.1 (oauth*.go; issue 13, cases BH-065, BH-066, BH-067 (a)):
//     an http server that answers 401 is authorized through the Go SDK's
//     client auth (auth.AuthorizationCodeHandler: protected-resource and
//     authorization-server discovery, client ID metadata document,
//     configured or dynamic client registration, PKCE, resource
//     indicator), run by [Login] (`aibuddy mcp login`, the browser step on
//     a loopback listener). Grants live in a [TokenStore] (one 0600 file
//     per server, atomic writes, a flock per server); [Options.OAuth]
//     sends them, refreshes them ahead of expiry and on 401 invalid_token,
//     one refresh at a time per server across parallel calls and
//     processes, never resending a refused token, and fails a server that
//     needs a new login at the Authorization stage with a [LoginError]
//     naming the command to run. No SSE fallback follows a 401.
//   - Pass-through: [Manager.Passthru] lists the connected servers'
//     resources, resource templates and prompts (every page), named for a
//     host (their own names unless two servers share one, then
//     aibuddy://<server>/<uri> and <server>__<prompt>; or always
//     namespaced), refreshed on their list_changed; [Manager.ReadResource],
//     [Manager.GetPrompt], [Manager.Complete] and [Manager.SubscribeResource]
//     (one upstream subscription per URI) reach the server named.
//   - Teardown: [Manager.Close] closes stdin, waits, then terminates and
//     kills each stdio server's process group, each step bounded; a
//     streamable HTTP session is ended with DELETE (the SDK bounds it to
//     5 s).
//   - Server requests and notifications (issue 13): the streamable
//     connection is handed to the SDK unwrapped, so its session hook opens
//     the standalone GET stream; ping and roots/list are answered and
//     elicitation/create refused with a JSON-RPC error, and notifications
//     outside a call (tools/list_changed, log messages) arrive, on stdio
//     and HTTP alike.
//
// # Supervision
//
// One policy, applied the same way to every transport (supervise.go;
// cases BH-061, BH-062, BH-063, BH-067 in shared/cases/9-mcp-lifecycle.md):
//
//   - A connection that ends without Close (a stdio process exits or is
//     killed, an HTTP server answers 404 for the session id, the
//     connection breaks) is restored: state [StateReconnecting] with the
//     reason, the server's tools stay registered, the first attempt runs at
//     once and later ones after Options.RestartBackoff doubling up to
//     RestartBackoffMax, at most Options.MaxRestarts attempts and
//     restorations within RestartWindow; then [StateFailed] with the
//     reason and the tools removed. MaxRestarts < 0 turns restoration off
//     ([StateDisconnected] at once). Subscribers hear of every change.
//   - Calls: one that arrives while an attempt runs waits for it; one in a
//     backoff gap fails at once (Execution stage, naming the reason: a
//     stdio exit status and the tail of stderr). A call whose connection
//     ended under it is sent again once on the restored connection only
//     if the tool is annotated readOnlyHint or idempotentHint; otherwise
//     "server restarted mid-call; not retried". A loss straight after the
//     restoration fails the call instead of looping.
//   - HTTP: a restoration is a new session: initialize, tools/list, names
//     routed again. initialize answered 502/503/504/429 is retried with the
//     backoff on the same transport within InitTimeout; a JSON-RPC error
//     body is surfaced as it is; an optional GET stream refused with 405
//     or 404 leaves a POST-only connection without error. There is no
//     automatic fallback to legacy SSE (configure type "sse").
//   - stdio: a restoration is a new process; the old process group is
//     stopped first. Close and [Manager.Reconnect] stop servers on purpose,
//     which never counts as a crash.
//   - Frames: a result over Options.MaxFrameBytes becomes an error for
//     its call; a stdio line that is not JSON after the handshake is
//     dropped and logged (frame.go). The server stays connected.
//   - Timeouts: Options.CallTimeout (default 10 min) bounds a call while
//     the server is silent; each progress notification restarts it.
//   - [Manager.Reconnect] is the operator's reconnect (BH-062): it closes
//     the connection on purpose (DELETE of the HTTP session) and reports
//     success only after initialize, tools/list and a non-empty registry.
package mcpclient
