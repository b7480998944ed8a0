// Package hooks runs PreToolUse and PostToolUse hooks in Claude Code's
// settings shape (its hooks reference): shell commands the user
// configures to check a call before it runs (a policy script before every
// shell command) or to act after it (a formatter after every edit). The
// pipeline runs them for every entry point alike (pipeline.Options.Hooks:
// aibuddy mcp, run and call); config/hooks.go parses the settings.
//
// # Settings
//
//	"hooks": {
//	  "PreToolUse":  [{"matcher": "execute", "hooks": [{"type": "command", "command": "./policy.sh", "timeout": 30}]}],
//	  "PostToolUse": [{"matcher": "write_file|edit_file", "hooks": [{"type": "command", "command": "./fmt.sh"}]}]}
//
// A matcher chooses tools by their aibuddy name (execute, write_file,
// edit_file, read_file, ...; an MCP tool by server__tool and also by
// Claude Code's mcp__server__tool): "" or "*" every tool, "a|b" exactly
// those names, anything else an RE2 regular expression found in the name
// ([Matcher]). Claude Code's own tool names (Bash, Write, Edit) are not
// aliases: the input fields differ (write_file has "path", not
// "file_path"), so a copied script must be adapted anyway.
//
// Every hook of every matching group runs, one after another in settings
// order (groups in order, hooks in a group in order), a command line
// given twice running once. Claude Code runs them in parallel; here a
// PostToolUse linter after a formatter sees the formatted file, and a
// PreToolUse deny stops the hooks after it.
//
// # Input
//
// A hook reads one JSON line on stdin ([Input]) with Claude Code's field
// names: session_id (the run's task id: an MCP session's, `aibuddy
// run`'s, one `aibuddy call`'s), cwd (the workspace), hook_event_name,
// tool_name, tool_input (the call's arguments as the model sent them:
// paths as given, relative to the workspace), tool_use_id (the
// toolCallId of the record), and for PostToolUse tool_response
// ({"text": the result's text, "evidence": its evidence}). Not sent:
// transcript_path and permission_mode (aibuddy keeps no transcript file;
// its modes are the permissions block's).
//
// # Output
//
// Exit 0: the call goes on. Stdout that starts with "{" is read as
// [Output]: for PreToolUse, hookSpecificOutput.permissionDecision
// "deny" refuses the call with permissionDecisionReason, "ask" puts it to
// a person first, "allow" lets it go on to the permission rules (which a
// hook cannot override); decision "block" (with reason) or continue
// false (with stopReason) refuse too; hookSpecificOutput.updatedInput
// replaces the input (checked against the schema again). For
// PostToolUse, decision "block" or continue false block the result.
// hookSpecificOutput.additionalContext is added to what the model sees;
// systemMessage is kept in the result's evidence for the person.
//
// Exit 2: PreToolUse refuses the call, PostToolUse blocks the result;
// stderr is the reason the model reads.
//
// # Failures fail closed
//
// Any other exit status, a timeout, a hook that cannot be started, and
// stdout that starts with "{" but is not valid [Output] are failures
// ([Error], naming the hook: event, command, matcher, settings place).
// A failing PreToolUse hook refuses the call at the Authorization stage
// (Claude Code lets it through; a policy hook that crashes must not open
// the gate). A failing PostToolUse hook makes the result a
// Verification-stage error that keeps the tool's own text: the call ran
// and its effect stands, the check after it did not complete.
//
// # Where hooks run
//
// In the sandbox execute uses, through sandbox.Sandbox.Exec, so a hook is
// confined exactly like a command of the model (sandbox.confinement,
// network, denyRead, readOnlyPaths; a confinement this machine cannot
// enforce fails every hook, closed), in the workspace root, with
// execute's environment (the sandbox's safe default set and
// limits.execEnv) plus CLAUDE_PROJECT_DIR and AIBUDDY_PROJECT_DIR (the
// workspace) and AIBUDDY_HOOK_EVENT. Each run is bounded by the hook's
// timeout (seconds; default limits.hookTimeout, 60 s) and its kept
// stdout and stderr by limits.hookMaxOutputBytes (65,536 bytes each).
// A formatter under "read-only" confinement cannot write: use
// "workspace-write" (the default).
package hooks
