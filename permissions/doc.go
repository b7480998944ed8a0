// Package permissions decides calls by permission rules in Claude Code's
// syntax, evaluated on what a call really reaches: the parsed shell AST of
// a command (mvdan.cc/sh/v3/syntax), the paths of a file call, the host
// of a fetch, the name and annotations of an MCP tool. It is the engine
// behind approval.Policy; its path matcher is also the one the file tools
// use for denied paths.
//
// # Settings
//
//	{"permissions": {
//	  "allow": ["Bash(npm run test:*)", "Edit(src/**)", "mcp__github__get_issue"],
//	  "ask":   ["Bash(git push *)"],
//	  "deny":  ["Read(./.env)", "Bash(curl:*)", "WebFetch(domain:example.com)"],
//	  "defaultMode": "default"}}
//
// A rule is a tool name, or a tool name with a specifier in parentheses:
//
//   - Bash(cmd): exactly that command; Bash(prefix:*) that prefix at a word
//     boundary; Bash(git * main) with "*" matching anything, spaces too (a
//     single trailing " *" also matches nothing: Bash(git push *) matches
//     "git push"). Bash, Bash() and Bash(*) match every command.
//   - Read(pattern), Edit(pattern) (Write, MultiEdit, NotebookEdit count
//     as Edit): gitignore-style globs ("*" one segment, "**" any depth; a
//     pattern without "/" matches at any depth) in Claude Code's forms:
//     "//abs/path" from the root, "~/path" from the home folder, "/path"
//     from the settings file's folder, "./path" or "path" from the
//     workspace.
//   - WebFetch(domain:example.com) (or domain:*.example.com for
//     subdomains).
//   - mcp__server (every tool of the server), mcp__server__* and
//     mcp__server__tool; our own names server__tool too.
//   - A bare tool name: a kind (Bash, Read, Edit, WebFetch: every tool
//     that declares that access, see tool.Access) or one of our wire names
//     (execute, write_file, github__create_issue). Claude Code's Glob,
//     Grep and LS name glob, grep and ls. A wire name with a specifier is
//     read with the grammar of the tool's access kind: execute(git push:*).
//
// deny beats ask beats allow, whatever the order or how specific a rule
// is. A part of a call no rule decides gets the mode's default:
//
//	mode               Read in workspace  Read outside  Edit in ws  Bash           MCP tool (not readOnlyHint)
//	default            allow              ask           ask         ask (read-only commands: allow)  ask
//	acceptEdits        allow              ask           allow       ask (read-only: allow)           ask
//	plan               allow              ask           deny        deny           deny
//	dontAsk            allow              deny          deny        deny (read-only: allow)          deny
//	bypassPermissions  allow              allow         allow       allow          allow
//	(no block)         allow              allow         allow       allow          allow
//
// In plan mode the capability plane offers only tools whose access kind
// is Read or whose annotations say readOnlyHint ([Engine.Offered]); a bare
// tool name in deny removes the tool from the set too. Explicit ask rules
// still ask in bypassPermissions, and deny rules always hold.
//
// # Commands
//
// Every simple command of a line is matched on its own: lists, pipes,
// &&, ||, ;, subshells, command and process substitutions (also in
// redirection targets, BH-087), function bodies, `sh -c`/`bash -c`/
// `zsh -c` and eval strings (parsed again). Wrappers are unwrapped first:
// env (options and NAME=VALUE), nohup, timeout (options and duration),
// command, builtin, exec, nice, time, xargs, sudo, doas, stdbuf, setsid,
// ionice, and leading VAR=x assignments. The programs of an option table
// (git, docker, kubectl, npm) have their global options dropped before the
// subcommand: `git -C dir push`, `git --git-dir=x push` and
// `git -c k=v push` are `git push` (BH-085). Deny and ask rules are
// matched on the command as written, without wrappers, normalized, and
// with the program's base name (/usr/bin/curl is curl); allow rules on the
// normalized form and the form without wrappers, and behind sudo or doas
// on the command as written too. A command passes only when every one of
// its commands does.
//
// What the rules cannot see is at least ask (in bypassPermissions only
// while some deny or ask rule could hold a command back): a program name
// computed at run time (a variable, a command or process substitution, an
// ANSI-C string, a brace expansion, a glob, a non-printing character such
// as U+200B: "program name computed at run time"), a shell reading
// commands from its input (curl … | sh), an option before a subcommand
// that the program's table does not know, a line that does not parse.
// Names that can be worked out without running anything are, so that
// deny still fires: $'\x63url', c=cu; ${c}rl and {curl,x} are curl.
// Confirm text shows the command with non-printing characters escaped
// ([Escape]).
//
// Words of a command that name a path a Read or Edit deny or ask rule
// covers make the command ask (BH-059: `cat .env`, `grep KEY .env`), and
// so do URLs whose host a WebFetch deny or ask rule covers. The shell is
// not path-sandboxed by these rules: `python3 -c "open('.e'+'nv')"` is
// caught only by an operating-system sandbox.
//
// The default read-only list ([ReadOnlyPrograms], BH-086) runs without a
// rule in the default mode: only when the whole line writes nothing (no
// redirection that writes, no tee, no find -exec/-execdir/-ok/-delete/
// -fprint*), prints no secrets (env or printenv with no arguments), and
// names no path outside the workspace (or permissions.additionalDirectories)
// and no credential path ([CredentialPaths], which ask in every mode
// but bypassPermissions). A file a redirection writes is an edit.
//
// # Today's approval keys
//
// They become rules of the same engine ([Options]):
//
//	approval.confirmTools[i]      ask rule on that tool name
//	approval.confirmCommands[i]   ask rule: the RE2 pattern matched on the whole line and on each command as written and normalized
//	approval.deniedPaths[i]       deny rules Read(p) and Edit(p); a name without "/" holds at any depth anywhere, "/abs" is absolute, "~/" the home folder, other "a/b" patterns the workspace
//	approval.confirmDestructiveMCP ask for MCP tools annotated destructiveHint: true
//	approval.confirmUnannotatedMCP ask for MCP tools with neither hint
//
// # Where this differs from Claude Code
//
// Claude Code strips only timeout, time, nice, nohup, stdbuf and bare
// xargs; here env, command, exec, sudo, doas, setsid, ionice and shell -c
// strings are unwrapped too (sudo keeps needing its own allow). Claude
// Code's Read/Edit rules do not reach Bash; here a command naming such a
// path asks. Read-only MCP tools (readOnlyHint) run without a rule.
// Without a permissions block, what no rule holds back runs (aibuddy's
// behaviour before the block existed). dontAsk is supported; auto is not.
package permissions
