package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/sandbox"
)

// Event is a hook event: when a hook runs.
type Event string

// The tool events (Claude Code's names).
const (
	// PreToolUse runs after a call's input passed its schema and before
	// the Authorization stage's rules and the call itself.
	PreToolUse Event = "PreToolUse"
	// PostToolUse runs after a call succeeded (and passed the tool's own
	// Verification), before its result is recorded and handed back; for a
	// call that writes files, while their write lock is still held.
	PostToolUse Event = "PostToolUse"
)

// Defaults of [Options].
const (
	DefaultTimeout        = 60 * time.Second // Claude Code's default hook timeout
	DefaultMaxOutputBytes = 64 << 10         // of stdout, and of stderr, per hook
)

// Matcher chooses tools by name, in Claude Code's rule: "" or "*" every
// tool; a matcher of only letters, digits, "_" and "|" exactly the names
// it lists ("execute|edit_file"); anything else an RE2 regular expression
// that must occur in the name ("mcp__github__.*", "^(read|write)_file$").
type Matcher struct {
	src   string
	all   bool
	names []string
	re    *regexp.Regexp
}

var exactList = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// ParseMatcher reads a matcher; the error is the regular expression's.
func ParseMatcher(s string) (Matcher, error) {
	m := Matcher{src: s}
	switch {
	case s == "" || s == "*":
		m.all = true
	case exactList.MatchString(s):
		m.names = strings.Split(s, "|")
	default:
		re, err := regexp.Compile(s)
		if err != nil {
			return Matcher{}, err
		}
		m.re = re
	}
	return m, nil
}

// Match reports whether the matcher chooses any of names (a tool's wire
// name and the other names it is known by, such as mcp__server__tool).
func (m Matcher) Match(names ...string) bool {
	for _, n := range names {
		switch {
		case m.all:
			return true
		case m.re != nil:
			if m.re.MatchString(n) {
				return true
			}
		default:
			for _, x := range m.names {
				if x == n {
					return true
				}
			}
		}
	}
	return false
}

// String is the matcher as written.
func (m Matcher) String() string { return m.src }

// Hook is one command hook as configured.
type Hook struct {
	Event   Event
	Matcher Matcher
	// Command is the shell command line, run as the sandbox runs execute's
	// commands (sh -c in the workspace root).
	Command string
	// Timeout bounds one run; 0 means Options.DefaultTimeout.
	Timeout time.Duration
	// Where names the hook's place in the settings for messages, e.g.
	// `hooks.PreToolUse[0].hooks[1] in ./aibuddy.json`.
	Where string
}

// String names the hook for a person: event, command, matcher and place.
func (h *Hook) String() string {
	s := fmt.Sprintf("%s hook %q (matcher %q", h.Event, h.Command, h.Matcher.String())
	if h.Where != "" {
		s += ", " + h.Where
	}
	return s + ")"
}

// Options configure a [Runner].
type Options struct {
	// Sandbox runs the hook commands: the one execute uses, so a hook is
	// confined exactly as a command of the model is (sandbox.confinement,
	// network, denyRead, ...). Required.
	Sandbox sandbox.Sandbox
	// Env changes the sandbox's default command environment the way
	// limits.execEnv does for execute (NAME, NAME=VALUE, -NAME), when the
	// sandbox offers ExecEnv (the local one does). Default none.
	Env []string
	// ProjectDir is the value of CLAUDE_PROJECT_DIR and
	// AIBUDDY_PROJECT_DIR, and the "cwd" of the input. Default the
	// sandbox's Workspace().
	ProjectDir string
	// DefaultTimeout bounds a hook that has no Timeout. Default 60 s
	// (limits.hookTimeout).
	DefaultTimeout time.Duration
	// MaxOutputBytes bounds what is kept of a hook's stdout, and of its
	// stderr, in bytes (limits.hookMaxOutputBytes); the rest is counted
	// and dropped. Default 65,536.
	MaxOutputBytes int
}

// Runner runs the configured hooks. Safe for concurrent use; it holds no
// per-call state.
type Runner struct {
	hooks []Hook
	opts  Options
}

// New returns the runner of hooks (in settings order) with opts.
func New(hooks []Hook, opts Options) *Runner {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.ProjectDir == "" && opts.Sandbox != nil {
		opts.ProjectDir = opts.Sandbox.Workspace()
	}
	return &Runner{hooks: append([]Hook(nil), hooks...), opts: opts}
}

// Matching returns the hooks of ev whose matcher chooses any of names, in
// settings order, a command line given twice run once (as Claude Code
// deduplicates identical handlers).
func (r *Runner) Matching(ev Event, names ...string) []*Hook {
	if r == nil {
		return nil
	}
	var out []*Hook
	seen := map[string]bool{}
	for i := range r.hooks {
		h := &r.hooks[i]
		if h.Event != ev || !h.Matcher.Match(names...) || seen[h.Command] {
			continue
		}
		seen[h.Command] = true
		out = append(out, h)
	}
	return out
}

// Call is what the hooks are told about one tool call.
type Call struct {
	SessionID string // the run's task id
	ToolUseID string // the toolCallId
	ToolName  string // the wire name
	// Aliases are further names the matchers are tried on (an MCP tool's
	// mcp__server__tool, Claude Code's spelling). Not sent.
	Aliases   []string
	ToolInput json.RawMessage
	// ToolResponse is the result as PostToolUse hooks see it; unused for
	// PreToolUse.
	ToolResponse json.RawMessage
}

// Input is the JSON a hook reads on stdin: Claude Code's field names.
type Input struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName Event           `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolResponse  json.RawMessage `json:"tool_response,omitempty"`
}

// Output is the JSON a hook may print on stdout when it exits 0 (Claude
// Code's fields; the ones that mean nothing here are accepted and
// ignored: suppressOutput).
type Output struct {
	// Continue false stops the call: PreToolUse refuses it, PostToolUse
	// blocks its result, with StopReason.
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SuppressOutput is Claude Code's transcript switch; ignored.
	SuppressOutput bool `json:"suppressOutput,omitempty"`
	// SystemMessage is for the person, not the model: kept in the
	// result's evidence ("hooks").
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision "block" refuses (PreToolUse) or blocks the result
	// (PostToolUse) with Reason; "approve" is the old spelling of
	// permissionDecision "allow".
	Decision           string    `json:"decision,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	HookSpecificOutput *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is Output.hookSpecificOutput.
type Specific struct {
	HookEventName string `json:"hookEventName,omitempty"`
	// PermissionDecision (PreToolUse): "allow" (the call goes on to the
	// Authorization rules as usual: a hook cannot grant what a rule
	// holds back), "deny" (refused, PermissionDecisionReason is the
	// model's reason) or "ask" (a person is asked first, with the
	// reason).
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	// UpdatedInput (PreToolUse) replaces the call's input; it is checked
	// against the tool's schema again.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// AdditionalContext is added to the model's view of the result.
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Decision is what the hooks of one event decided about a call.
type Decision string

// Decisions. A PostToolUse outcome is Proceed or Block.
const (
	Proceed Decision = ""      // nothing to say: the call goes on
	Allow   Decision = "allow" // a PreToolUse hook allowed it (the rules still apply)
	Ask     Decision = "ask"   // a PreToolUse hook wants a person asked
	Deny    Decision = "deny"  // a PreToolUse hook refused it
	Block   Decision = "block" // a PostToolUse hook blocked the result
)

// Note is something one hook said.
type Note struct {
	Hook *Hook
	Text string
}

// Outcome is what running the hooks of one event for one call gave.
type Outcome struct {
	// Ran are the hooks that ran, in order.
	Ran []*Hook
	// Decision is the strongest decision (deny > ask > allow; block),
	// By the hook that made it and Reason its reason.
	Decision Decision
	By       *Hook
	Reason   string
	// Blocks are every PostToolUse block, in order (Decision Block: the
	// first).
	Blocks []Note
	// UpdatedInput is the input a PreToolUse hook replaced the call's
	// with (the last one; each later hook saw it); nil when none did.
	UpdatedInput json.RawMessage
	// Context are the additionalContext texts and, for PostToolUse, the
	// reasons of blocks, for the model.
	Context []Note
	// Messages are systemMessage texts, for the person.
	Messages []Note
	// Err is the first hook failure (*Error): a PreToolUse failure stops
	// the hooks after it; PostToolUse hooks after a failure still run
	// and Failed lists every failure.
	Err    error
	Failed []*Error
}

// Run runs the hooks of ev matching c, one after another in settings
// order (a formatter then a linter sees the formatted file), and reads
// what each says:
//
//   - exit 0: the call goes on; stdout that starts with "{" must be an
//     [Output] (otherwise a failure: a policy hook whose JSON is broken
//     never lets a call through); other stdout is ignored;
//   - exit 2: PreToolUse refuses the call, PostToolUse blocks the
//     result; stderr is the reason;
//   - any other exit, a timeout (the hook's, else Options.DefaultTimeout),
//     a hook that could not be started (the sandbox's confinement not
//     enforceable, a missing shell), output over Options.MaxOutputBytes
//     where JSON was expected: an [*Error] in Outcome.Err naming the hook,
//     what happened and what to do.
//
// PreToolUse stops at the first deny or failure (the hooks after it do
// not run); PostToolUse runs every matching hook. ctx ending stops the
// running hook (a failure: cancelled).
func (r *Runner) Run(ctx context.Context, ev Event, c Call) *Outcome {
	out := &Outcome{}
	input := c.ToolInput
	for _, h := range r.Matching(ev, append([]string{c.ToolName}, c.Aliases...)...) {
		out.Ran = append(out.Ran, h)
		in := Input{SessionID: c.SessionID, Cwd: r.opts.ProjectDir, HookEventName: ev, ToolName: c.ToolName,
			ToolInput: input, ToolUseID: c.ToolUseID}
		if ev == PostToolUse {
			in.ToolResponse = c.ToolResponse
		}
		o, blocked, err := r.runOne(ctx, h, in)
		if err != nil {
			out.Failed = append(out.Failed, err)
			if out.Err == nil {
				out.Err = err
			}
			if ev == PreToolUse {
				return out
			}
			continue
		}
		if blocked != "" {
			if ev == PreToolUse {
				out.Decision, out.By, out.Reason = Deny, h, blocked
				return out
			}
			out.Blocks = append(out.Blocks, Note{h, blocked})
			if out.Decision != Block {
				out.Decision, out.By, out.Reason = Block, h, blocked
			}
			continue
		}
		if o == nil {
			continue
		}
		if o.SystemMessage != "" {
			out.Messages = append(out.Messages, Note{h, o.SystemMessage})
		}
		spec := o.HookSpecificOutput
		if spec == nil {
			spec = &Specific{}
		}
		if spec.AdditionalContext != "" {
			out.Context = append(out.Context, Note{h, spec.AdditionalContext})
		}
		reason := o.Reason
		stop := o.Continue != nil && !*o.Continue
		if stop && o.StopReason != "" {
			reason = o.StopReason
		}
		if ev == PostToolUse {
			if stop || o.Decision == "block" {
				if reason == "" {
					reason = "(the hook gave no reason)"
				}
				out.Blocks = append(out.Blocks, Note{h, reason})
				if out.Decision != Block {
					out.Decision, out.By, out.Reason = Block, h, reason
				}
			}
			continue
		}
		dec := Decision(spec.PermissionDecision)
		if spec.PermissionDecisionReason != "" {
			reason = spec.PermissionDecisionReason
		}
		switch {
		case stop || o.Decision == "block":
			dec = Deny
		case dec == "" && o.Decision == "approve":
			dec = Allow
		}
		switch dec {
		case Proceed:
		case Deny:
			if reason == "" {
				reason = "(the hook gave no reason)"
			}
			out.Decision, out.By, out.Reason = Deny, h, reason
			return out
		case Ask:
			if out.Decision != Ask {
				out.Decision, out.By, out.Reason = Ask, h, reason
			}
		case Allow:
			if out.Decision == Proceed {
				out.Decision, out.By, out.Reason = Allow, h, reason
			}
		default:
			err := &Error{Hook: h, ExitCode: 0, Problem: fmt.Sprintf("printed permissionDecision %q (want allow, deny or ask)", spec.PermissionDecision)}
			out.Failed, out.Err = append(out.Failed, err), err
			return out
		}
		if len(spec.UpdatedInput) > 0 && !bytes.Equal(bytes.TrimSpace(spec.UpdatedInput), []byte("null")) {
			input = append(json.RawMessage(nil), spec.UpdatedInput...)
			out.UpdatedInput = input
		}
	}
	return out
}

// Error is a hook that failed: it exited with a status other than 0 or
// 2, timed out, was cancelled, could not be started, or printed output
// that cannot be read.
type Error struct {
	Hook     *Hook
	ExitCode int    // -1 when killed or never started
	Problem  string // what happened, e.g. "exited 1", "timed out after 60s"
	Stderr   string // the end of its stderr, trimmed
	Err      error  // the sandbox's error, when it could not start
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s", e.Hook, e.Problem)
	if e.Stderr != "" {
		s += "; its stderr: " + e.Stderr
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Hint says what to do about the failure.
func (e *Error) Hint() string {
	where := "the settings"
	if e.Hook.Where != "" {
		where = e.Hook.Where
	}
	if e.Hook.Event == PreToolUse {
		return "the call was not run: PreToolUse hooks fail closed. Tell the user; the hook (" + where +
			") must be fixed, given a longer timeout, or removed before this call can run"
	}
	return "the call itself ran and its effect stands, but this hook's work after it did not complete. Tell the user; the hook (" +
		where + ") must be fixed, given a longer timeout, or removed"
}

// errNotStarted is the cause of a hook that had nowhere to run.
var errNotStarted = errors.New("not started")

// runOne runs one hook with in on stdin: its Output (nil for none), the
// reason of an exit-2 block, or the failure.
func (r *Runner) runOne(ctx context.Context, h *Hook, in Input) (*Output, string, *Error) {
	if r.opts.Sandbox == nil {
		return nil, "", &Error{Hook: h, ExitCode: -1, Problem: "was not run: no sandbox to run hooks in", Err: errNotStarted}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return nil, "", &Error{Hook: h, ExitCode: -1, Problem: "was not run: its input is not JSON", Err: err}
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = r.opts.DefaultTimeout
	}
	stdout, stderr := &capped{max: r.opts.MaxOutputBytes}, &capped{max: r.opts.MaxOutputBytes}
	req := sandbox.ExecRequest{Command: h.Command, Timeout: timeout, Stdin: bytes.NewReader(append(stdin, '\n')),
		Stdout: stdout, Stderr: stderr}
	vars := []string{"CLAUDE_PROJECT_DIR=" + r.opts.ProjectDir, "AIBUDDY_PROJECT_DIR=" + r.opts.ProjectDir,
		"AIBUDDY_HOOK_EVENT=" + string(h.Event)}
	if ee, ok := r.opts.Sandbox.(interface{ ExecEnv([]string) []string }); ok {
		req.Env = ee.ExecEnv(append(append([]string(nil), r.opts.Env...), vars...))
	} else {
		var pre strings.Builder
		for _, v := range vars {
			k, val, _ := strings.Cut(v, "=")
			fmt.Fprintf(&pre, "%s=%s; export %s\n", k, shellQuote(val), k)
		}
		req.Command = pre.String() + h.Command
	}
	res, err := r.opts.Sandbox.Exec(ctx, req)
	if err != nil {
		return nil, "", &Error{Hook: h, ExitCode: -1, Problem: "could not be started", Err: err}
	}
	fail := func(problem string) *Error {
		return &Error{Hook: h, ExitCode: res.ExitCode, Problem: problem, Stderr: stderr.tail()}
	}
	switch {
	case res.TimedOut:
		return nil, "", fail(fmt.Sprintf("timed out after %s and was stopped", timeout))
	case res.Cancelled:
		return nil, "", fail("was stopped: the call was cancelled")
	case res.ExitCode == 2:
		reason := stderr.text()
		if reason == "" {
			reason = "(the hook exited 2 without a reason on stderr)"
		}
		return nil, reason, nil
	case res.ExitCode != 0:
		if res.ExitCode < 0 {
			return nil, "", fail("was killed by a signal")
		}
		p := fmt.Sprintf("exited %d (0 lets the call go on, 2 blocks it; anything else is a failure)", res.ExitCode)
		if len(res.Denied) > 0 {
			p += "; the sandbox refused: " + strings.Join(res.Denied, "; ")
		}
		return nil, "", fail(p)
	}
	body := bytes.TrimSpace(stdout.buf.Bytes())
	if len(body) == 0 || body[0] != '{' {
		return nil, "", nil
	}
	if stdout.dropped > 0 {
		return nil, "", fail(fmt.Sprintf("printed more than %d bytes of JSON (limits.hookMaxOutputBytes), so its output cannot be read", r.opts.MaxOutputBytes))
	}
	var o Output
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, "", fail(fmt.Sprintf("exited 0 but its stdout is not the hook output JSON (%v)", err))
	}
	return &o, "", nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// text is what was kept, trimmed, with a note of what was dropped.
func (c *capped) text() string {
	s := strings.TrimSpace(strings.ToValidUTF8(c.buf.String(), "\uFFFD"))
	if c.dropped > 0 {
		s += fmt.Sprintf(" [%d more bytes cut by limits.hookMaxOutputBytes]", c.dropped)
	}
	return s
}

// tail is the end of what was kept (at most 2,000 bytes), for errors.
func (c *capped) tail() string {
	s := c.text()
	if len(s) > 2000 {
		s = "…" + strings.ToValidUTF8(s[len(s)-2000:], "")
	}
	return s
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
