// Package web is the web view of the tool plane (issue 16; the seed's
// client projection, for a person): what the gateway does now, what a run
// did, where its calls failed and what compaction saved, and, when the
// MCP host cannot ask (approval.via "web" or "both"), the place where a
// person approves or rejects a high-impact action.
//
// [Server] serves everything under /ui: on `aibuddy mcp --http` beside
// /mcp (with a [Hub], the live state), and on `aibuddy ui` over the call
// records alone. Pages:
//
//	/ui/            live: pending confirms and questions, calls as they run
//	                (stage reached, live output, heartbeats, duration,
//	                result summary, a Stop button), MCP sessions with their
//	                tool sets and tool_search activations, upstream servers
//	                with state and count-gate decision, exclusions
//	/ui/tasks       tasks with failures by stage (a chart)
//	/ui/tasks/ID    one task's calls
//	/ui/calls/ID    one call: client, model and record projections side by
//	                side, paged; the compaction saving; the view_tool_call
//	                pointer
//	/ui/search      calls by tool and failure stage
//
// Access: the same bearer token as the MCP endpoint, entered once at
// /ui/login (a form POST); the server then keeps a session (in memory)
// and sets a cookie HttpOnly, SameSite=Strict, Path=/ui. Every request
// refuses Sec-Fetch-Site: cross-site and a foreign Origin; a
// state-changing one (approve, reject, answer, stop, log out) needs the
// cookie, the same origin (Origin or Sec-Fetch-Site: same-origin; neither
// present is refused) and the page's CSRF token (header X-CSRF-Token).
// Pages carry a Content-Security-Policy allowing only this server's own
// scripts and styles and no framing.
//
// Live: the [Hub] is a pipeline.Observer; its events (call, stage, output,
// beat, approvals, refresh) go out as server-sent events from a ring of
// web.eventBuffer events. Publishing never waits for a browser: a stream
// that falls out of the ring gets a "gap" event and the page reloads the
// snapshot (/ui/api/snapshot, which carries its sequence number); a
// reconnect sends Last-Event-ID and continues where it was.
//
// Front end: html/template pages with one small vanilla script for the
// live page (no framework, no CDN, everything embedded with embed): the
// pages are few, mostly static tables, and the only dynamic part is an
// event stream applied to a list; a framework would weigh more than the
// whole view, and htmx would still need script for the stream. Charts are
// inline SVG rects (no inline styles, so the CSP stays strict).
package web
