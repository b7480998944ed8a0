package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
)

// Config is the whole settings file. The zero value plus Default's limits is
// what aibuddy runs with when no file is given.
type Config struct {
	// ToolKeys are the tool groups to enable, e.g. ["filesystem","execute"].
	// Omitted (null) means every built-in group.
	ToolKeys []string `json:"toolKeys,omitempty"`
	// Sandbox chooses where calls take effect.
	Sandbox Sandbox `json:"sandbox"`
	// Limits are the bounds of the built-in tools.
	Limits Limits `json:"limits"`
	// DataDir is where aibuddy keeps what it writes for itself (full command
	// output, later the call records); relative paths are relative to the
	// settings file's folder. Default: $AIBUDDY_DATA_DIR, else the user's
	// cache folder + "/aibuddy" (os.UserCacheDir).
	DataDir string `json:"dataDir,omitempty"`
	// DataRetention is how long the data folder keeps a task's records,
	// full command outputs and offloaded calls after its last call; older
	// tasks are pruned whole at start-up. Default 30 days ("720h"); a long
	// duration such as "87600h" keeps ten years.
	DataRetention Duration `json:"dataRetention,omitempty"`
	// Skills are folders of Agent Skills (one sub-folder per skill with a
	// SKILL.md); relative paths are relative to the settings file's folder.
	Skills []string `json:"skills,omitempty"`
	// Discovery holds the count gates and tool_search bounds.
	Discovery Discovery `json:"discovery"`
	// MCP holds the client side's timeouts for the servers in MCPServers.
	MCP MCP `json:"mcp"`
	// Compaction configures background precompaction of large results.
	Compaction Compaction `json:"compaction"`
	// Approval says which actions need a person's approval and which
	// paths the file tools never touch.
	Approval Approval `json:"approval"`
	// Permissions is a permission-rule block in Claude Code's syntax
	// ({"allow": [...], "ask": [...], "deny": [...], "defaultMode": ...});
	// package permissions documents the rules and modes. Omitted: no
	// block, and what no approval rule holds back runs. With a block,
	// approval.confirmCommands and approval.confirmDestructiveMCP apply
	// only when set explicitly (their defaults give way to the block's
	// defaultMode); approval.deniedPaths keeps its default either way.
	Permissions *permissions.Settings `json:"permissions,omitempty"`
	// Hooks are PreToolUse and PostToolUse commands in Claude Code's
	// settings shape (config/hooks.go; package hooks runs them).
	Hooks *Hooks `json:"hooks,omitempty"`
	// Provider configures the model routes of "aibuddy run".
	Provider Provider `json:"provider"`
	// Agent configures `aibuddy run`'s step loop.
	Agent Agent `json:"agent"`
	// Records configures the durable call records (records.db in DataDir).
	Records Records `json:"records"`
	// Store chooses the backend of the records (config/store.go).
	Store StoreSettings `json:"store"`
	// Jobs configures background jobs (config/jobs.go).
	Jobs Jobs `json:"jobs"`
	// Web configures the web view (/ui, aibuddy ui; config/web.go).
	Web Web `json:"web"`
	// MCPServers is kept verbatim in the Claude Desktop format
	// ({"name": {"command": ..., "args": [...], "env": {...}} or
	// {"url": ..., "type": "http"|"sse", "headers": {...}}}).
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`

	// Dir is the folder of the settings file Load read ("" for Parse):
	// what relative paths in it, and "/path" permission rules, are
	// relative to. Not a settings key.
	Dir string `json:"-"`
}

// Discovery configures which MCP tools are deferred (seed: "MCP currently
// uses two count gates") and tool_search. Zero means the default given.
type Discovery struct {
	PerServer     int `json:"perServer,omitempty"`     // a server with more tools than this has them deferred; default 10
	Total         int `json:"total,omitempty"`         // more MCP tools than this in all defers every MCP tool; default 30
	SearchResults int `json:"searchResults,omitempty"` // tool_search candidates without max_results; default 5
	SearchMax     int `json:"searchMax,omitempty"`     // largest max_results; default 10
}

// MCP configures connections to MCP servers. Zero means the default given.
type MCP struct {
	InitTimeout Duration `json:"initTimeout,omitempty"` // connect + initialize + tools/list per server; default 30 s
	// CallTimeout bounds one upstream tools/call while the server is
	// silent about it: each progress notification (a heartbeat) starts it
	// again. A server's own "callTimeout" wins. Default 10 min
	// (mcpclient.DefaultCallTimeout, what hosts use).
	CallTimeout Duration `json:"callTimeout,omitempty"`
	// RestartBackoff and RestartBackoffMax shape the restoration of a lost
	// upstream connection (a stdio server respawned, an HTTP session
	// opened again after 404): the first attempt runs at once, each later
	// one waits RestartBackoff, doubling up to RestartBackoffMax. Defaults
	// 250 ms and 30 s.
	RestartBackoff    Duration `json:"restartBackoff,omitempty"`
	RestartBackoffMax Duration `json:"restartBackoffMax,omitempty"`
	// MaxRestarts bounds the restorations of one server within
	// RestartWindow, and the attempts of one restoration; past it the
	// server is failed with the reason (`aibuddy tools`). Defaults 5 and
	// 10 min.
	MaxRestarts   int      `json:"maxRestarts,omitempty"`
	RestartWindow Duration `json:"restartWindow,omitempty"`
	// UpstreamMaxFrameBytes bounds one message from an upstream MCP server
	// (bytes: a stdio line, an HTTP body or event); a result over it fails
	// its call only, the server stays connected. Default 16 MiB (the MCP
	// Go SDK's own line bound).
	UpstreamMaxFrameBytes int `json:"upstreamMaxFrameBytes,omitempty"`
	// StartupWait bounds how long `aibuddy mcp` waits for MCP servers before
	// it answers the host; servers still connecting join later and the host
	// is told with notifications/tools/list_changed. Default 5 s; set it to
	// initTimeout or more to always wait for every server. `aibuddy run`
	// and `aibuddy tools` always wait for every server.
	StartupWait Duration `json:"startupWait,omitempty"`
	// ExpectedToolsPerServer is how many tools the count gates expect of a
	// server that is still connecting and whose count is not known from an
	// earlier start (the data folder's mcp-tool-counts.json keeps the last
	// count of each server). With the default 1, 31 or more configured
	// servers defer every MCP tool, and list tool_search, from the host's
	// first tools/list. Default 1 (the least a server that serves tools
	// brings).
	ExpectedToolsPerServer int `json:"expectedToolsPerServer,omitempty"`
	// ListChangedInterval is the least time between two refreshes of
	// `aibuddy mcp`'s tool list after upstream servers joined, failed or
	// changed their tools: changes within it are taken together, so the
	// host gets one notifications/tools/list_changed for a burst of
	// servers joining rather than one per server. Default 250 ms.
	ListChangedInterval Duration `json:"listChangedInterval,omitempty"`
	// MaxFrameBytes bounds one inbound message of `aibuddy mcp` over stdio
	// (bytes, one JSON-RPC line); a larger one is answered with a JSON-RPC
	// error and skipped. Default 64 MiB.
	MaxFrameBytes int64 `json:"maxFrameBytes,omitempty"`
	// DrainGrace bounds how long `aibuddy mcp` over stdio, after the host
	// closed its input, lets the requests it already read finish so they
	// are answered; requests still running then are cancelled. Default
	// 10 s.
	DrainGrace Duration `json:"drainGrace,omitempty"`
	// StopGrace bounds how long `aibuddy mcp`, stopped by SIGTERM or
	// SIGINT, waits for the calls it cancelled to return; a call still
	// running then (stuck in a system call its cancellation cannot stop,
	// e.g. on a hung network filesystem) is named in a warning and left
	// behind, and the process exits. Default 10 s.
	StopGrace Duration `json:"stopGrace,omitempty"`
	// MaxSchemaDepth bounds the nesting of one MCP tool's input schema, in
	// levels of JSON objects and arrays (the top-level object is level 1;
	// each property level of a schema adds two). A deeper schema is
	// quarantined with the reason, shown by `aibuddy tools`. Default 128.
	MaxSchemaDepth int `json:"maxSchemaDepth,omitempty"`
	// NotificationsPerSecond bounds the notifications (message, progress,
	// list_changed, ...) aibuddy handles from one MCP server, per second,
	// with a burst of as many; the excess is dropped and counted (shown by
	// `aibuddy tools` and logged at most once per
	// notificationLogInterval). A dropped list_changed still refreshes the
	// server's tools once, after the debounce. Default 100.
	NotificationsPerSecond int `json:"notificationsPerSecond,omitempty"`
	// NotificationLogInterval is the least time between two warnings about
	// one server's dropped notifications. Default 10 s.
	NotificationLogInterval Duration `json:"notificationLogInterval,omitempty"`
	// InheritEnv names host environment variables stdio MCP servers
	// inherit in addition to the default set (HOME, PATH, USER, locale,
	// proxies, ...; mcpclient.DefaultInheritEnv). Anything else reaches a
	// server only through its "env" entry.
	InheritEnv []string `json:"inheritEnv,omitempty"`
	// MaxInputRounds bounds the input-required replies one upstream
	// tools/call may get (MCP 2026-07-28 multi round-trip requests: a
	// question for the user inside the reply, the call sent again with
	// the answer); a server still asking after that many rounds has the
	// call stopped with an Execution-stage error. Default 4.
	MaxInputRounds int `json:"maxInputRounds,omitempty"`
	// ProtocolVersion is the newest MCP protocol version aibuddy offers
	// upstream servers (one of 2026-07-28, 2025-11-25, 2025-06-18,
	// 2025-03-26, 2024-11-05); each server may settle on an older one it
	// supports. Default: the newest (2026-07-28).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// OAuthRefreshBefore is how long before an upstream http server's
	// OAuth access token expires aibuddy refreshes it before a request (at
	// most half the token's lifetime; a 401 invalid_token refreshes too).
	// Grants are kept in the data folder's mcp-oauth/ (0600) and made with
	// `aibuddy mcp login SERVER`. Default 60 s.
	OAuthRefreshBefore Duration `json:"oauthRefreshBefore,omitempty"`
	// PassthroughNames is how `aibuddy mcp` names the upstream servers'
	// resources and prompts for the host: "auto" (default) keeps a URI or
	// prompt name as its server gives it unless another connected server
	// offers the same one, then every one of them is namespaced
	// (aibuddy://<server>/<uri>, <server>__<prompt>); "prefixed" always
	// namespaces them, as tools are.
	PassthroughNames string `json:"passthroughNames,omitempty"`
	// PassthroughMaxBlobBytes bounds one binary resource (or a prompt's
	// image or audio) `aibuddy mcp` passes from an upstream server to the
	// host, in decoded bytes; a larger one is replaced by a note naming
	// its size. Text is bounded by limits.resultMaxChars. Default
	// 3,932,160 (3.75 MiB, as limits.readMaxImageBytes).
	PassthroughMaxBlobBytes int64 `json:"passthroughMaxBlobBytes,omitempty"`

	// The keys below bound `aibuddy mcp --http` (the server side).

	// SessionIdleTimeout closes an HTTP session that has had no request
	// for this long (a POST in progress holds it open; an open GET stream
	// alone does not); its per-session tool state is freed and its
	// Mcp-Session-Id then gets 404, on which the MCP spec has the client
	// start a new session. Default 30 min (DefaultSessionIdleTimeout).
	SessionIdleTimeout Duration `json:"sessionIdleTimeout,omitempty"`
	// HTTPHeaderTimeout bounds reading one request's headers; default
	// 10 s.
	HTTPHeaderTimeout Duration `json:"httpHeaderTimeout,omitempty"`
	// HTTPBodyTimeout bounds reading one request's body, from the end of
	// its headers (a slower client gets 408 and the connection is
	// closed). It does not bound the response: a GET stream or a long
	// tool call stays open. Default 30 s.
	HTTPBodyTimeout Duration `json:"httpBodyTimeout,omitempty"`
	// HTTPMaxBodyBytes bounds one request's body (bytes); a larger one
	// gets 413. Default 4 MiB (the MCP Go SDK's
	// mcp.DefaultMaxRequestBodyBytes).
	HTTPMaxBodyBytes int64 `json:"httpMaxBodyBytes,omitempty"`
	// OAuth, with an issuer, makes `aibuddy mcp --http` an OAuth 2.1
	// resource server (MCP authorization spec) instead of checking the
	// one bearer token of $AIBUDDY_TOKEN.
	OAuth OAuth `json:"oauth,omitzero"`
}

// OAuth configures `aibuddy mcp --http` as an OAuth 2.1 resource server
// for a deployed gateway (MCP authorization spec, 2025-06-18): every
// request needs a JWT access token (RFC 9068) signed by a key of the
// issuer's JWK set, from that issuer, for this resource, unexpired, with
// the scopes named; the protected-resource metadata (RFC 9728) names the
// issuer to clients.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414),
	// such as "https://auth.example.com"; setting it turns OAuth on.
	Issuer string `json:"issuer,omitempty"`
	// Resource is this server's public URL, as clients reach it (behind
	// a proxy, the proxy's), such as "https://tools.example.com/mcp": the
	// "resource" of the metadata (RFC 9728) and, by default, the audience
	// a token must name (RFC 8707). Required with issuer.
	Resource string `json:"resource,omitempty"`
	// Audience is the "aud" a token must carry when the authorization
	// server names this resource otherwise; default Resource (compared
	// as the MCP Go SDK's oauthex.MatchesResource does: a trailing slash
	// aside, exactly).
	Audience string `json:"audience,omitempty"`
	// Scopes must all be in a token's "scope" (or "scp") claim; a token
	// without one gets 403 insufficient_scope. Default none.
	Scopes []string `json:"scopes,omitempty"`
	// JWKSURL is where the issuer's signing keys are; default the
	// jwks_uri of its metadata (RFC 8414
	// /.well-known/oauth-authorization-server, else OpenID Connect
	// discovery), read at start-up.
	JWKSURL string `json:"jwksURL,omitempty"`
	// ClockSkew is the tolerance on a token's exp; default 0.
	ClockSkew Duration `json:"clockSkew,omitempty"`
}

// DefaultSessionIdleTimeout is mcp.sessionIdleTimeout when unset.
const DefaultSessionIdleTimeout = 30 * time.Minute

// Compaction configures precompaction (seed: "When a tool result reaches
// the current 2,500-token precompaction threshold ..."). Zero means the
// default given.
type Compaction struct {
	ThresholdTokens int `json:"thresholdTokens,omitempty"` // results from this size are compacted; default 2,500 (o200k estimate)
	TargetTokens    int `json:"targetTokens,omitempty"`    // size a compacted form aims at; default 1,000
	// Workers bounds compactions that run at once in the background;
	// default 2.
	Workers int `json:"workers,omitempty"`
	// OneShotCalls has `aibuddy call` precompact its result as `mcp` and
	// `run` do. Default false: a one-shot call's record is read by a
	// person, not by a later model step, so the CLI skips the work (the
	// o200k vocabulary and the trim cost more than a search itself).
	OneShotCalls bool `json:"oneShotCalls,omitempty"`
	// ViewMaxChars bounds one view_tool_call slice, in characters;
	// default 8,000.
	ViewMaxChars int `json:"viewMaxChars,omitempty"`
	// ViewMaxTokens bounds one view_tool_call slice, in tokens (o200k
	// estimate); default 2,000 (keep it under thresholdTokens, or a
	// recovery is itself compacted).
	ViewMaxTokens int `json:"viewMaxTokens,omitempty"`
	// ViewMaxJSONBytes bounds, in bytes, an execute output file that
	// view_tool_call's json_path parses whole; larger files are refused
	// (pattern and lines stream any size). Default 16,777,216 (16 MiB).
	ViewMaxJSONBytes int64 `json:"viewMaxJSONBytes,omitempty"`
	// Strategies choose per tool name: "trim", "summarize", "drop" (only
	// for tools whose output is disposable: no recovery pointer) or "keep".
	Strategies map[string]string `json:"strategies,omitempty"`
	// GroupStrategies choose per tool group key ("filesystem", "execute",
	// "mcp:<server>" is not a group: name MCP tools in Strategies).
	GroupStrategies map[string]string `json:"groupStrategies,omitempty"`
	// CompactionSummary holds the summary keys (summaryModel, ...;
	// summarize.go).
	CompactionSummary
}

// Agent configures the agent of `aibuddy run`. Zero means the default given.
type Agent struct {
	// ContextBudgetTokens bounds the input of one model request (messages,
	// system prompt and tools), in tokens as estimated with o200k_base:
	// above it the oldest whole exchanges are dropped, the task kept, and a
	// note tells the model view_tool_call recovers any dropped call.
	// Default 150,000 (a 200,000-token model with room for its answer);
	// lower it for a smaller model.
	ContextBudgetTokens int `json:"contextBudgetTokens,omitempty"`
	// ContextNoteCalls is how many dropped tool calls the note left in
	// their place names one by one (tool, arguments cut to 80
	// characters, toolCallId for view_tool_call); older ones are counted
	// and `aibuddy calls list --task` lists them. Count; default 25.
	ContextNoteCalls int `json:"contextNoteCalls,omitempty"`
	// MaxParallelCalls is the most tool calls of one model turn that run
	// at once: read-only tools (readOnlyHint, tool_search) beside each
	// other, writes beside calls on other paths (one path's writes in
	// call order), execute and tools without annotations alone. Results
	// go back in call order. Count; default 4; 1 runs every call alone.
	MaxParallelCalls int `json:"maxParallelCalls,omitempty"`
	// ParallelTools names tools (glob patterns, "server__*") whose calls
	// may run beside others although they are not marked read-only: an
	// MCP tool without annotations known to be safe, or "execute".
	// Default none.
	ParallelTools []string `json:"parallelTools,omitempty"`
	// SerialTools names tools (glob patterns) whose calls always run
	// alone, even when read-only. Omitted: ["ask_user_question"] (it asks
	// a person); [] means none.
	SerialTools []string `json:"serialTools,omitempty"`
}

// Records configures the call records. Zero means the default given.
type Records struct {
	// Sync is what a call's final record survives before its result is
	// handed back: "normal" (default) survives the process being killed
	// (SIGKILL, a crash, OOM) but the last commits before an OS crash or
	// power loss may be lost; "full" syncs the record to disk first
	// (survives power loss; one fsync per commit, shared by calls that
	// finish together). Neither mode ever corrupts the file.
	Sync string `json:"sync,omitempty"`
	// MaxBatch is the most records committed in one transaction when
	// calls finish at once (they share one commit and its sync). Count;
	// default 64.
	MaxBatch int `json:"maxBatch,omitempty"`
	// RunningDelay bounds how long the running record of a read-only
	// call (readOnlyHint) may wait uncommitted: a call that ends sooner
	// writes its record once (one commit), a longer one is visible as
	// running from this delay on. Duration; default 50ms
	// (sqlitestore.DefaultRunningDelay); negative: every running record
	// is committed before the tool runs.
	RunningDelay Duration `json:"runningDelay,omitempty"`
}

// Approval configures human decisions (seed: "High-impact actions also
// require a separate human decision"). An omitted list keeps the default of
// approval.DefaultPolicy; an empty list ([]) means none. Each key becomes
// rules of the permission engine (package permissions: confirmTools and
// confirmCommands ask rules, deniedPaths deny rules for Read and Edit,
// the MCP keys ask rules on annotations); with a Permissions block,
// confirmCommands and confirmDestructiveMCP keep their defaults only when
// set.
type Approval struct {
	// Off turns confirmation and path denial off entirely.
	Off bool `json:"off,omitempty"`
	// ConfirmTools are tool names whose every call is confirmed.
	ConfirmTools []string `json:"confirmTools,omitempty"`
	// ConfirmCommands are RE2 patterns; an execute command matching one is
	// confirmed. Default: rm -r/-f, git push --force, git reset --hard,
	// git clean -f, mkfs/dd/shred, curl|sh, sudo, chmod -R.
	ConfirmCommands *[]string `json:"confirmCommands,omitempty"`
	// DeniedPaths are path patterns the file tools never touch; an execute
	// command naming one is confirmed. Default: .env, .env.*, *.pem, *.key,
	// id_rsa, id_ed25519, .netrc, .npmrc, credentials.json.
	DeniedPaths *[]string `json:"deniedPaths,omitempty"`
	// ConfirmDestructiveMCP confirms MCP tools annotated destructiveHint:
	// true. Default true.
	ConfirmDestructiveMCP *bool `json:"confirmDestructiveMCP,omitempty"`
	// ConfirmUnannotatedMCP confirms MCP tools with neither readOnlyHint
	// nor destructiveHint (the MCP default is "destructive"). Default false.
	ConfirmUnannotatedMCP bool `json:"confirmUnannotatedMCP,omitempty"`
	// Via says who is asked: "host" (the MCP host, by elicitation; the
	// default), "web" (a browser on /ui of aibuddy mcp --http) or "both"
	// (the first answer wins). config/web.go checks it.
	Via string `json:"via,omitempty"`
}

// Provider configures the model routes of "aibuddy run".
type Provider struct {
	// NativeToolSearch says when a route uses the provider's own tool
	// search (Anthropic defer_loading + tool search tool, OpenAI Responses
	// tool_search) instead of aibuddy's activeTools path: "auto" (default;
	// the official endpoint and a model on the documented allowlist of
	// provider.ChooseStrategy), "on" (every anthropic and openai route,
	// e.g. a model newer than the allowlist) or "off" (never).
	NativeToolSearch string `json:"nativeToolSearch,omitempty"`
	// OpenAIStrict says when the "openai" route sends a function tool
	// with "strict": true (provider.StrictMode): "auto" (default; when the
	// schema fits strict mode's subset after meaning-preserving rewrites),
	// "exact" (only a schema already in the subset) or "off".
	OpenAIStrict string `json:"openaiStrict,omitempty"`
	// SchemaDialect is the schema subset of the "openai-chat" route
	// (provider.SchemaDialect): "auto" (default; Gemini's subset for
	// Gemini's OpenAI-compatible endpoint), "openai" or "gemini".
	SchemaDialect string `json:"schemaDialect,omitempty"`
	// SchemaRefDepth is, in the Gemini dialect, how many times a
	// recursive $ref is expanded inside itself before the rest is cut off
	// with a note. Default 3 (toolschema.DefaultGeminiRefDepth).
	SchemaRefDepth int `json:"schemaRefDepth,omitempty"`
}

// Sandbox selects the sandbox adapter.
type Sandbox struct {
	// Kind is "local" (default), "e2b" (a remote sandbox over E2B's envd
	// protocol; see E2B) or "daytona" (not available in this build: it
	// fails at start-up).
	Kind string `json:"kind,omitempty"`
	// E2B configures kind "e2b" (config/e2b.go).
	E2B E2B `json:"e2b,omitzero"`
	// Workspace is the root folder; relative paths are relative to the
	// settings file's folder. Default: the current folder (or --workspace).
	Workspace string `json:"workspace,omitempty"`
	// Shell runs commands as Shell -c COMMAND. Default "/bin/sh".
	Shell string `json:"shell,omitempty"`
	// KillDelay is the wait between SIGTERM and SIGKILL to a stopped
	// command's process group (on timeout or cancellation), as a duration.
	// Default 2 s (localsandbox.DefaultKillDelay).
	KillDelay Duration `json:"killDelay,omitempty"`
	// DrainGrace bounds how long output is still read after the shell
	// exits while background processes hold the output open: until the
	// command has run DrainGrace in all, and at least DrainGrace/4 after
	// the exit; then they are killed and the result says so. A duration;
	// default 1 s (localsandbox.DefaultDrainGrace).
	DrainGrace Duration `json:"drainGrace,omitempty"`
	// MaxPathDepth bounds the components of a path the file tools
	// resolve, as given and as its symlinks expand: a deeper one is
	// refused at once (Parameters stage), and ls, glob and grep do not
	// descend below it. Components; default 256
	// (localsandbox.Options.MaxPathDepth).
	MaxPathDepth int `json:"maxPathDepth,omitempty"`
	// MaxPathBytes bounds the bytes of such a path, the same way. Bytes;
	// default 4,096 (Linux's PATH_MAX).
	MaxPathBytes int `json:"maxPathBytes,omitempty"`
	// MaxReadBytes bounds the bytes one read_file reads of a file: its
	// window, line count and sha256 come from at most this many bytes from
	// the start, and a larger file's result says what the digest covers.
	// Bytes; default 67,108,864 (64 MiB).
	MaxReadBytes int64 `json:"maxReadBytes,omitempty"`
	// Confinement is the operating-system confinement of execute:
	// "workspace-write" (default on Linux: only the workspace, a private
	// temp folder and writablePaths are writable), "read-only" (only the
	// private temp folder) or "off" (your user's rights; a person's
	// setting, never a tool argument). A confinement this machine cannot
	// enforce leaves execute out of the tool set with the reason.
	Confinement string `json:"confinement,omitempty"`
	// Network is a confined command's network: "off" (default: loopback
	// only), "limited" (only allowedDomains, through aibuddy's egress
	// proxy and resolver; the default when allowedDomains is set) or "on".
	Network string `json:"network,omitempty"`
	// AllowedDomains are the hosts a limited network reaches:
	// "example.com", "*.example.com" (subdomains), "host:port", IP
	// addresses. Default none.
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// DenyRead are paths a confined command cannot read ("~/" is the
	// home folder). Omitted: ~/.ssh, ~/.aws, ~/.azure, ~/.config/gcloud,
	// ~/.netrc, ~/.docker, ~/.kube, ~/.gnupg, ~/.git-credentials,
	// ~/.config/gh, ~/.password-store, ~/.local/share/keyrings, cargo's
	// and PyPI's credentials; [] means none. The workspace's
	// approval.deniedPaths are unreadable too.
	DenyRead *[]string `json:"denyRead,omitempty"`
	// ReadOnlyPaths stay read-only inside the writable workspace
	// (workspace-relative), renames and links into them included.
	// Omitted: .git and .aibuddy; [] means none.
	ReadOnlyPaths *[]string `json:"readOnlyPaths,omitempty"`
	// WritablePaths are further folders a workspace-write command may
	// write (absolute or "~/..."), e.g. "~/.cache/go-build". Default none.
	WritablePaths []string `json:"writablePaths,omitempty"`
	// MCPServersDefault is the confinement of stdio MCP servers that have
	// no "sandbox" entry of their own. Default {"confinement": "off"}:
	// servers run as you start them.
	MCPServersDefault *ServerSandbox `json:"mcpServersDefault,omitempty"`
}

// ServerSandbox is the confinement of a stdio MCP server: the "sandbox"
// entry of a server in mcpServers, or sandbox.mcpServersDefault. The
// server's workspace is the run's; the other rules (denyRead,
// readOnlyPaths, writablePaths, deniedPaths) are the sandbox block's.
type ServerSandbox struct {
	Confinement    string   `json:"confinement,omitempty"`    // "workspace-write", "read-only" or "off" (default)
	Network        string   `json:"network,omitempty"`        // "off" (default), "limited" or "on"
	AllowedDomains []string `json:"allowedDomains,omitempty"` // hosts a limited network reaches
}

// Check validates the values of one server's confinement; where names
// the setting in errors.
func (s ServerSandbox) Check(where string) error {
	switch s.Confinement {
	case "", "workspace-write", "read-only", "off":
	default:
		return fmt.Errorf("%s.confinement: %q (want workspace-write, read-only or off)", where, s.Confinement)
	}
	switch s.Network {
	case "", "off", "limited", "on":
		if s.Network != "" && s.Network != "limited" && len(s.AllowedDomains) > 0 {
			return fmt.Errorf("%s.allowedDomains is set but %s.network is %q; set it to \"limited\" (or leave it out)", where, where, s.Network)
		}
	default:
		return fmt.Errorf("%s.network: %q (want off, limited or on)", where, s.Network)
	}
	for i, d := range s.AllowedDomains {
		if err := confine.ValidDomain(d); err != nil {
			return fmt.Errorf("%s.allowedDomains[%d]: %v", where, i, err)
		}
	}
	return nil
}

// Limits are the built-in tools' bounds. Zero means the default given.
type Limits struct {
	LsMaxEntries       int      `json:"lsMaxEntries,omitempty"`       // entries per ls call; default 1,000
	LsMaxDepth         int      `json:"lsMaxDepth,omitempty"`         // levels ls may descend; default 5
	ReadMaxLines       int      `json:"readMaxLines,omitempty"`       // lines per read_file call; default 2,000
	ReadMaxLineChars   int      `json:"readMaxLineChars,omitempty"`   // characters per line; default 2,000
	ReadMaxBytes       int64    `json:"readMaxBytes,omitempty"`       // bytes of text per read_file call; default 262,144
	ReadMaxImageBytes  int64    `json:"readMaxImageBytes,omitempty"`  // raw bytes of one image; default 3,932,160 (3.75 MiB: its base64 fits 5 MiB)
	SearchMaxResults   int      `json:"searchMaxResults,omitempty"`   // files (glob) or matches (grep); default 100
	SearchMaxLineChars int      `json:"searchMaxLineChars,omitempty"` // characters kept around a match; default 400
	SearchTimeout      Duration `json:"searchTimeout,omitempty"`      // one ls, glob or grep walk's deadline; default 10 s
	ExecDefaultTimeout Duration `json:"execDefaultTimeout,omitempty"` // execute timeout without timeout_ms; default 2 min
	ExecMaxTimeout     Duration `json:"execMaxTimeout,omitempty"`     // largest timeout_ms honoured; default 10 min
	ExecGrace          Duration `json:"execGrace,omitempty"`          // hard deadline = timeout + grace; default 30 s
	ExecHeartbeat      Duration `json:"execHeartbeat,omitempty"`      // client heartbeat interval; default 30 s
	ExecMaxOutputChars int      `json:"execMaxOutputChars,omitempty"` // characters of output the model sees; default 30,000
	// ExecMaxOutputFileBytes bounds one call's full output file in
	// dataDir/outputs, in bytes; past it the file stops growing and the
	// result says so. Default 1,073,741,824 (1 GiB).
	ExecMaxOutputFileBytes int64 `json:"execMaxOutputFileBytes,omitempty"`
	// DataDirMaxBytes bounds the whole data folder (records, full outputs,
	// offloaded compactions), in bytes: before a full output file grows
	// past it, the oldest full outputs and offloaded compactions are
	// removed (records never are); when nothing is left to remove the file
	// stops growing and the result says so. Default 10,737,418,240 (10 GiB).
	DataDirMaxBytes int64 `json:"dataDirMaxBytes,omitempty"`
	// ResultMaxChars bounds the text of every tool result the model sees
	// (MCP tools, file tools, execute), in characters: a larger result
	// keeps its first and last halves with a header naming what was
	// omitted and the view_tool_call that recovers it from the call's
	// record. The file tools stop within it themselves (read_file ends
	// its window at the last whole line that fits and names the offset
	// that continues). Default 30,000 characters.
	ResultMaxChars int `json:"resultMaxChars,omitempty"`
	// ExecEnv changes the commands' environment, which is a safe default
	// set (PATH, HOME, LANG, ... from the host) plus the non-interactive
	// variables CI=1, DEBIAN_FRONTEND=noninteractive, GIT_TERMINAL_PROMPT=0,
	// GH_PROMPT_DISABLED=1, PIP_NO_INPUT=1, NO_COLOR=1, TERM=dumb,
	// PAGER/GIT_PAGER/GH_PAGER/MANPAGER=cat, EDITOR/VISUAL/GIT_EDITOR=true.
	// Entries apply in order: "NAME" passes the host's NAME through (e.g.
	// GOPATH), "NAME=VALUE" sets it (e.g. "CI=0"), "-NAME" removes it
	// (e.g. "-CI"). Default none.
	ExecEnv []string `json:"execEnv,omitempty"`
	// HookTimeout bounds a hook without its own "timeout"; default 60 s
	// (Claude Code's). HookMaxOutputBytes bounds what is kept of one
	// hook's stdout, and of its stderr, in bytes; default 65,536.
	HookTimeout        Duration `json:"hookTimeout,omitempty"`
	HookMaxOutputBytes int      `json:"hookMaxOutputBytes,omitempty"`
}

// DefaultExecMaxTimeout is limits.execMaxTimeout when unset (the default of
// coretools.ExecuteOptions.MaxTimeout, which config does not import; a test
// in internal/cli checks they agree). A limits.execDefaultTimeout above the
// effective maximum is refused rather than silently clamped.
const DefaultExecMaxTimeout = 10 * time.Minute

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "2m") or a number of milliseconds.
type Duration time.Duration

// UnmarshalJSON accepts "30s" or 30000.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"30s\" or a number of milliseconds", s)
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a Go duration such as \"30s\" or a whole number of milliseconds", b)
	}
	*d = Duration(time.Duration(ms) * time.Millisecond)
	return nil
}

// MarshalJSON writes the Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ErrInvalid is wrapped by every error Load and Parse return for a bad file.
var ErrInvalid = errors.New("invalid settings")

// Load reads and validates the settings file at path.
//
// Errors wrap ErrInvalid and name the file and key: malformed JSON (with
// line and column), an unknown key, a value of the wrong type, a negative
// limit. A missing file is an error wrapping fs.ErrNotExist.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	c.Dir = filepath.Dir(path)
	return c, nil
}

// Parse decodes and validates a settings document strictly.
func Parse(data []byte) (*Config, error) {
	var generic any
	if err := json.Unmarshal(data, &generic); err == nil {
		if err := exactKeys(generic, reflect.TypeFor[Config](), ""); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the settings object", ErrInvalid)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &c, nil
}

// exactKeys rejects an object key that names a field only up to case
// ("toolkeys" for "toolKeys"): encoding/json would accept it silently.
func exactKeys(v any, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	obj, ok := v.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct { // its keys sit in this object
			for j := range f.Type.NumField() {
				if n, _, _ := strings.Cut(f.Type.Field(j).Tag.Get("json"), ","); n != "" && n != "-" {
					fields[n] = f.Type.Field(j).Type
				}
			}
		}
	}
	for k, sub := range obj {
		ft, ok := fields[k]
		if !ok {
			for name := range fields {
				if strings.EqualFold(name, k) {
					return fmt.Errorf("unknown key %q (did you mean %q? keys are case-sensitive)", at+k, at+name)
				}
			}
			continue // unknown keys are reported by the decoder
		}
		if err := exactKeys(sub, ft, at+k+"."); err != nil {
			return err
		}
	}
	return nil
}

func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Sprintf("malformed JSON at line %d, column %d: %v", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("key %q: %v value where %v is expected", te.Field, te.Value, te.Type)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown key " + strings.TrimPrefix(msg, "json: unknown field ") +
			" (see the settings reference in README.md)"
	}
	return msg
}

func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func (c *Config) validate() error {
	if err := c.validateWeb(); err != nil {
		return err
	}
	l := c.Limits
	ints := map[string]int64{
		"limits.lsMaxEntries": int64(l.LsMaxEntries), "limits.lsMaxDepth": int64(l.LsMaxDepth),
		"limits.readMaxLines": int64(l.ReadMaxLines), "limits.readMaxLineChars": int64(l.ReadMaxLineChars),
		"limits.readMaxBytes": l.ReadMaxBytes, "limits.readMaxImageBytes": l.ReadMaxImageBytes,
		"limits.searchMaxResults": int64(l.SearchMaxResults), "limits.searchMaxLineChars": int64(l.SearchMaxLineChars),
		"limits.searchTimeout": int64(l.SearchTimeout), "limits.execDefaultTimeout": int64(l.ExecDefaultTimeout),
		"limits.execMaxTimeout": int64(l.ExecMaxTimeout), "limits.execGrace": int64(l.ExecGrace),
		"limits.execHeartbeat": int64(l.ExecHeartbeat), "limits.execMaxOutputChars": int64(l.ExecMaxOutputChars),
		"limits.execMaxOutputFileBytes": l.ExecMaxOutputFileBytes, "limits.dataDirMaxBytes": l.DataDirMaxBytes,
		"sandbox.killDelay": int64(c.Sandbox.KillDelay), "sandbox.drainGrace": int64(c.Sandbox.DrainGrace),
		"sandbox.maxPathDepth": int64(c.Sandbox.MaxPathDepth), "sandbox.maxPathBytes": int64(c.Sandbox.MaxPathBytes),
		"sandbox.maxReadBytes": c.Sandbox.MaxReadBytes,
		"discovery.perServer":  int64(c.Discovery.PerServer), "discovery.total": int64(c.Discovery.Total),
		"limits.resultMaxChars":   int64(l.ResultMaxChars),
		"discovery.searchResults": int64(c.Discovery.SearchResults), "discovery.searchMax": int64(c.Discovery.SearchMax),
		"dataRetention": int64(c.DataRetention), "mcp.initTimeout": int64(c.MCP.InitTimeout), "mcp.callTimeout": int64(c.MCP.CallTimeout), "mcp.startupWait": int64(c.MCP.StartupWait), "mcp.maxFrameBytes": c.MCP.MaxFrameBytes, "mcp.drainGrace": int64(c.MCP.DrainGrace),
		"mcp.stopGrace":              int64(c.MCP.StopGrace),
		"mcp.listChangedInterval":    int64(c.MCP.ListChangedInterval),
		"mcp.expectedToolsPerServer": int64(c.MCP.ExpectedToolsPerServer),
		"mcp.restartBackoff":         int64(c.MCP.RestartBackoff), "mcp.restartBackoffMax": int64(c.MCP.RestartBackoffMax),
		"mcp.maxRestarts": int64(c.MCP.MaxRestarts), "mcp.restartWindow": int64(c.MCP.RestartWindow),
		"mcp.upstreamMaxFrameBytes":  int64(c.MCP.UpstreamMaxFrameBytes),
		"compaction.thresholdTokens": int64(c.Compaction.ThresholdTokens), "compaction.targetTokens": int64(c.Compaction.TargetTokens),
		"compaction.workers": int64(c.Compaction.Workers), "compaction.viewMaxChars": int64(c.Compaction.ViewMaxChars),
		"compaction.viewMaxTokens": int64(c.Compaction.ViewMaxTokens), "compaction.viewMaxJSONBytes": c.Compaction.ViewMaxJSONBytes,
		"agent.contextBudgetTokens":  int64(c.Agent.ContextBudgetTokens),
		"mcp.maxSchemaDepth":         int64(c.MCP.MaxSchemaDepth),
		"mcp.notificationsPerSecond": int64(c.MCP.NotificationsPerSecond), "mcp.notificationLogInterval": int64(c.MCP.NotificationLogInterval),
		"mcp.sessionIdleTimeout": int64(c.MCP.SessionIdleTimeout), "mcp.httpHeaderTimeout": int64(c.MCP.HTTPHeaderTimeout),
		"mcp.httpBodyTimeout": int64(c.MCP.HTTPBodyTimeout), "mcp.httpMaxBodyBytes": c.MCP.HTTPMaxBodyBytes,
		"mcp.oauth.clockSkew":         int64(c.MCP.OAuth.ClockSkew),
		"mcp.oauthRefreshBefore":      int64(c.MCP.OAuthRefreshBefore),
		"records.maxBatch":            int64(c.Records.MaxBatch),
		"agent.contextNoteCalls":      int64(c.Agent.ContextNoteCalls),
		"agent.maxParallelCalls":      int64(c.Agent.MaxParallelCalls),
		"mcp.maxInputRounds":          int64(c.MCP.MaxInputRounds),
		"mcp.passthroughMaxBlobBytes": c.MCP.PassthroughMaxBlobBytes,
	}
	var bad []string
	for k, v := range ints {
		if v < 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("negative values for %s (omit a key or use 0 for its default)", strings.Join(bad, ", "))
	}
	if err := c.Jobs.check(); err != nil {
		return err
	}
	maxT, which := l.ExecMaxTimeout.D(), "limits.execMaxTimeout (%s)"
	if maxT == 0 {
		maxT, which = DefaultExecMaxTimeout, "limits.execMaxTimeout (unset, so its default %s)"
	}
	if l.ExecDefaultTimeout.D() > maxT {
		return fmt.Errorf("limits.execDefaultTimeout (%s) exceeds "+which+"; raise limits.execMaxTimeout or lower limits.execDefaultTimeout",
			l.ExecDefaultTimeout.D(), maxT)
	}
	for where, m := range map[string]map[string]string{"compaction.strategies": c.Compaction.Strategies,
		"compaction.groupStrategies": c.Compaction.GroupStrategies} {
		for k, v := range m {
			switch v {
			case "trim", "summarize", "drop", "keep":
			default:
				return fmt.Errorf("%s.%s: %q is not a strategy (want trim, summarize, drop or keep)", where, k, v)
			}
		}
	}
	if err := c.Compaction.CompactionSummary.check(); err != nil {
		return err
	}
	if t := c.Compaction; t.ThresholdTokens > 0 && t.TargetTokens >= t.ThresholdTokens {
		return fmt.Errorf("compaction.targetTokens (%d) must be below compaction.thresholdTokens (%d)", t.TargetTokens, t.ThresholdTokens)
	}
	switch c.MCP.ProtocolVersion {
	case "", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
	default:
		return fmt.Errorf("mcp.protocolVersion: %q is not an MCP protocol version aibuddy speaks (want 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 or 2024-11-05; omit it for the newest)", c.MCP.ProtocolVersion)
	}
	if n := c.MCP.PassthroughNames; n != "" && n != "auto" && n != "prefixed" {
		return fmt.Errorf("mcp.passthroughNames is %q: use \"auto\" (the default) or \"prefixed\"", n)
	}
	if o := c.MCP.OAuth; o.Issuer != "" && o.Resource == "" {
		return fmt.Errorf("mcp.oauth.resource is required with mcp.oauth.issuer: set it to this server's public URL, such as \"https://tools.example.com/mcp\"")
	} else if o.Issuer == "" && (o.Resource != "" || o.Audience != "" || len(o.Scopes) > 0 || o.JWKSURL != "") {
		return fmt.Errorf("mcp.oauth: issuer is not set, so the other keys have no effect; set mcp.oauth.issuer or remove mcp.oauth")
	}
	if err := c.Store.validate(); err != nil {
		return err
	}
	switch c.Records.Sync {
	case "", "normal", "full":
	default:
		return fmt.Errorf("records.sync: %q (want normal or full)", c.Records.Sync)
	}
	switch c.Provider.NativeToolSearch {
	case "", "auto", "on", "off":
	default:
		return fmt.Errorf("provider.nativeToolSearch: %q (want auto, on or off)", c.Provider.NativeToolSearch)
	}
	switch c.Provider.OpenAIStrict {
	case "", "auto", "exact", "off":
	default:
		return fmt.Errorf("provider.openaiStrict: %q (want auto, exact or off)", c.Provider.OpenAIStrict)
	}
	switch c.Provider.SchemaDialect {
	case "", "auto", "openai", "gemini":
	default:
		return fmt.Errorf("provider.schemaDialect: %q (want auto, openai or gemini)", c.Provider.SchemaDialect)
	}
	if c.Provider.SchemaRefDepth < 0 {
		return fmt.Errorf("provider.schemaRefDepth: %d (want 1 or more; 0 or unset means 3)", c.Provider.SchemaRefDepth)
	}
	sb := c.Sandbox
	if err := (ServerSandbox{Confinement: sb.Confinement, Network: sb.Network, AllowedDomains: sb.AllowedDomains}).Check("sandbox"); err != nil {
		return err
	}
	if sb.MCPServersDefault != nil {
		if err := sb.MCPServersDefault.Check("sandbox.mcpServersDefault"); err != nil {
			return err
		}
	}
	for i, w := range sb.WritablePaths {
		if !strings.HasPrefix(w, "~/") && !filepath.IsAbs(w) {
			return fmt.Errorf("sandbox.writablePaths[%d] %q: want an absolute path or one starting with ~/", i, w)
		}
	}
	if sb.DenyRead != nil {
		for i, w := range *sb.DenyRead {
			if !strings.HasPrefix(w, "~/") && w != "~" && !filepath.IsAbs(w) {
				return fmt.Errorf("sandbox.denyRead[%d] %q: want an absolute path or one starting with ~/", i, w)
			}
		}
	}
	if sb.ReadOnlyPaths != nil {
		for i, r := range *sb.ReadOnlyPaths {
			if !filepath.IsLocal(filepath.Clean(r)) {
				return fmt.Errorf("sandbox.readOnlyPaths[%d] %q: want a path inside the workspace, relative to it", i, r)
			}
		}
	}
	for i, e := range l.ExecEnv {
		if err := sandbox.ValidEnvOverride(e); err != nil {
			return fmt.Errorf("limits.execEnv[%d]: %v", i, err)
		}
	}
	for where, pats := range map[string][]string{"agent.parallelTools": c.Agent.ParallelTools, "agent.serialTools": c.Agent.SerialTools} {
		for i, p := range pats {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return fmt.Errorf("%s[%d] %q is not a tool name or glob pattern (\"*\", \"?\", \"[a-z]\"); fix or remove it", where, i, p)
			}
		}
	}
	if err := c.checkHooks(); err != nil {
		return err
	}
	for i, k := range c.ToolKeys {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("toolKeys[%d] is empty", i)
		}
	}
	if err := c.checkE2B(); err != nil {
		return err
	}
	return nil
}
