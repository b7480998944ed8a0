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
//   - Pass-through: [Manager.Passthru] lists the connected servers'
//     resources, resource templates and prompts (every page), named for a
//     host (their own names unless two servers share one, then
//     aibuddy://<server>/<uri> and <server>__<prompt>; or always
//     namespaced), refreshed on their list_changed; [Manager.ReadResource],
//     [Manager.GetPrompt], [Manager.Complete] and [Manager.SubscribeResource]
//     (one upstream subscription per URI) reach the server named.
//   - Teardown: [Manager.Close] closes stdin, waits, then terminates and
//     kills each stdio server's process group, each step bounded.
package mcpclient
