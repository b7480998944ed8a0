package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aibuddy/aibuddy/tool"
)

// Action is one concrete high-impact call awaiting a human decision (seed:
// "confirm records the target, scope, and expected consequence before the
// effect and waits for approval or rejection").
type Action struct {
	CallID string          // the toolCallId the decision is bound to
	Tool   string          // tool wire name
	Input  json.RawMessage // normalized input: keys sorted, no insignificant space
	// Target is what the effect touches: a path, a shell command, an MCP
	// tool on its server.
	Target string
	// Scope is where the effect happens, e.g. "workspace file",
	// "workspace shell (not path-sandboxed)", "MCP server github".
	Scope string
	// Consequence is the expected effect, one sentence for a person.
	Consequence string
	// Reasons say which rules of the [Policy] made the action high impact,
	// e.g. `tool "write_file" is configured for confirmation`,
	// `command names ".env", a path denied to file tools`.
	Reasons []string
}

// Key identifies the exact action: the same tool, the same normalized
// input and the same target give the same key. A decision is bound to one
// call's key and is never looked up for another call.
func (a Action) Key() string {
	h := sha256.New()
	h.Write([]byte(a.Tool))
	h.Write([]byte{0})
	h.Write(a.Input)
	h.Write([]byte{0})
	h.Write([]byte(a.Target))
	return hex.EncodeToString(h.Sum(nil))
}

// Summary is the one-line description of the action used in prompts and
// in the user-role text of a completed exchange, e.g.
// "execute `rm -rf build` (workspace shell (not path-sandboxed)): runs ...".
func (a Action) Summary() string {
	return fmt.Sprintf("%s %s (%s): %s", a.Tool, a.Target, a.Scope, a.Consequence)
}

// Decision is a person's answer to one Action.
type Decision struct {
	Approved bool
	// Note is what the person said besides yes or no (may be empty); it is
	// passed to the model.
	Note string
}

// Confirmer asks a person to approve or reject an action and waits.
// Confirm must return when ctx is done (with ctx's error). An error means
// nobody could decide; the action is then refused, never run unasked.
type Confirmer interface {
	Confirm(ctx context.Context, a Action) (Decision, error)
}

// ConfirmerFunc adapts a function to Confirmer.
type ConfirmerFunc func(ctx context.Context, a Action) (Decision, error)

// Confirm calls f.
func (f ConfirmerFunc) Confirm(ctx context.Context, a Action) (Decision, error) { return f(ctx, a) }

// Exchange is one completed confirm exchange: the action as recorded
// before the effect, and the decision. It is what a run records and what
// context reconstruction turns into user-role text ("Approved: …").
type Exchange struct {
	Action   Action
	Decision Decision
	// Err is set when no decision could be had (no confirmer, the prompt
	// failed or was cancelled); the action was refused.
	Err     error
	AskedAt time.Time
	At      time.Time
}

// Text is the exchange as plain user-role text for later model steps:
// "Approved: <summary>", "Rejected: <summary>" or "Not confirmed (<why>):
// <summary>", followed by the person's note when there is one.
func (e Exchange) Text() string {
	var b strings.Builder
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, "Not confirmed (%v): %s", e.Err, e.Action.Summary())
	case e.Decision.Approved:
		b.WriteString("Approved: " + e.Action.Summary())
	default:
		b.WriteString("Rejected: " + e.Action.Summary())
	}
	if n := strings.TrimSpace(e.Decision.Note); n != "" {
		b.WriteString("\nThe user said: " + n)
	}
	return b.String()
}

// Policy says which actions are high impact. The zero value confirms
// nothing; [DefaultPolicy] is what `aibuddy run` uses.
type Policy struct {
	// Tools are tool names whose every call is confirmed.
	Tools []string
	// Destructive confirms MCP tools whose annotations say
	// destructiveHint: true explicitly. (The MCP spec's default for an
	// unannotated, non-read-only tool is destructive too; set
	// Unannotated to follow it.) Built-in tools are governed by Tools,
	// CommandPatterns and DeniedPaths only, so a policy can confirm
	// `rm -r` without confirming every command.
	Destructive bool
	// Unannotated confirms MCP tools that have no destructiveHint and no
	// readOnlyHint (the MCP default: "destructive").
	Unannotated bool
	// ExecuteTool is the shell tool whose "command" argument the command
	// rules read. Default "execute".
	ExecuteTool string
	// CommandPatterns are regular expressions (RE2) matched against an
	// execute command; a match confirms the call.
	CommandPatterns []string
	// DeniedPaths are path patterns denied to the file tools (path.Match
	// syntax, matched against the whole slash path and against each
	// component, e.g. ".env", ".env.*", "*.pem", "secrets/*"). A call of
	// read_file, write_file, edit_file, ls, glob or grep whose "path"
	// names one is refused at the Authorization stage; an execute command
	// whose words name one goes to confirm (BH-059: `cat .env`,
	// `grep KEY .env`, `sed -n 1p .env`). The shell is not
	// path-sandboxed by these rules: a command that builds the name at run
	// time (python3 -c "open('.e'+'nv')") is caught only by an OS-level
	// sandbox.
	DeniedPaths []string
}

// DefaultPolicy is the policy of `aibuddy run`: destructive MCP tools,
// shell commands that delete recursively, force-push, hard-reset, rewrite
// disks or pipe downloads into a shell, and any command naming a
// credentials file (.env, .env.*, *.pem, *.key, id_rsa, id_ed25519,
// .netrc, .npmrc, credentials.json).
func DefaultPolicy() *Policy {
	return &Policy{
		Destructive: true,
		CommandPatterns: []string{
			`\brm\s+(-[A-Za-z]*[rRf]|--recursive|--force)`,
			`\bgit\s+push\b.*(\s-f\b|--force)`,
			`\bgit\s+reset\s+--hard\b`,
			`\bgit\s+clean\s+-[A-Za-z]*f`,
			`\b(mkfs|dd|shred)\b`,
			`\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b`,
			`\bsudo\b`,
			`\bchmod\s+-R\b`,
		},
		DeniedPaths: []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", ".netrc", ".npmrc", "credentials.json"},
	}
}

// fileTools are the built-in tools whose "path" argument DeniedPaths
// governs.
var fileTools = []string{"read_file", "write_file", "edit_file", "ls", "glob", "grep"}

// Subject is a call as the policy sees it: the tool (for its annotations),
// the MCP server it comes from ("" for a built-in tool) and the call.
type Subject struct {
	Tool   *tool.Tool
	Server string
	Call   *tool.Call
}

// Verdict is what the policy says about one call.
type Verdict int

// Verdicts.
const (
	Allow   Verdict = iota // run without asking
	Confirm                // ask a person first
	Deny                   // refuse (Authorization stage)
)

// Check classifies one call. For Confirm it returns the Action to put to a
// person; for Deny, an Action whose Reasons say why. Input that is not a
// JSON object is allowed through (the tool's own schema check refuses it
// at the Parameters stage).
func (p *Policy) Check(s Subject) (Verdict, Action) {
	if p == nil || s.Call == nil {
		return Allow, Action{}
	}
	input, obj := normalize(s.Call.Input)
	a := Action{CallID: s.Call.ID, Tool: s.Call.Name, Input: input}
	if !obj {
		return Allow, a
	}
	var args map[string]any
	_ = json.Unmarshal(input, &args)
	str := func(k string) string { v, _ := args[k].(string); return v }
	exec := p.ExecuteTool
	if exec == "" {
		exec = "execute"
	}

	switch {
	case s.Server == "" && s.Call.Name == exec:
		cmd := str("command")
		a.Target = "`" + cmd + "`"
		a.Scope = "workspace shell (not path-sandboxed)"
		if wd := str("workdir"); wd != "" {
			a.Scope += ", in " + wd
		}
		a.Consequence = "runs the command with your user's rights; its effects on files, network and processes are whatever the command does"
	case s.Server == "" && slices.Contains(fileTools, s.Call.Name):
		target := str("path")
		if target == "" {
			target = "."
		}
		a.Target, a.Scope = target, "workspace file"
		switch s.Call.Name {
		case "write_file":
			a.Consequence = fmt.Sprintf("creates or replaces %s with %d bytes", target, len(str("content")))
		case "edit_file":
			a.Consequence = "changes the content of " + target
		default:
			a.Consequence = "reads " + target + " into the model's context"
		}
	case s.Server != "":
		a.Target = s.Call.Name
		a.Scope = "MCP server " + s.Server
		a.Consequence = "calls the server's tool, whose effect the server decides"
	default:
		a.Target, a.Scope, a.Consequence = s.Call.Name, "built-in tool", "runs the tool"
	}

	if s.Server == "" && slices.Contains(fileTools, s.Call.Name) {
		if pat, ok := p.deniedPath(str("path")); ok {
			a.Reasons = append(a.Reasons, fmt.Sprintf("path %q matches %q, which is denied to file tools", str("path"), pat))
			return Deny, a
		}
	}
	if slices.Contains(p.Tools, s.Call.Name) {
		a.Reasons = append(a.Reasons, fmt.Sprintf("tool %q is configured for confirmation", s.Call.Name))
	}
	if s.Server != "" && s.Tool != nil {
		ann := s.Tool.Annotations()
		switch {
		case p.Destructive && ann != nil && ann.DestructiveHint != nil && *ann.DestructiveHint:
			a.Reasons = append(a.Reasons, "the MCP server marks the tool destructive (destructiveHint)")
		case p.Unannotated && (ann == nil || (!ann.ReadOnlyHint && ann.DestructiveHint == nil)):
			a.Reasons = append(a.Reasons, "the MCP tool is not annotated read-only or non-destructive (MCP default: destructive)")
		}
	}
	if s.Server == "" && s.Call.Name == exec {
		cmd := str("command")
		for _, pat := range p.CommandPatterns {
			re, err := compilePattern(pat)
			if err != nil {
				a.Reasons = append(a.Reasons, fmt.Sprintf("command pattern %q does not compile (%v), so every command is confirmed", pat, err))
				continue
			}
			if re.MatchString(cmd) {
				a.Reasons = append(a.Reasons, fmt.Sprintf("command matches %q", pat))
			}
		}
		for _, w := range CommandWords(cmd) {
			if pat, ok := p.deniedPath(w); ok {
				a.Reasons = append(a.Reasons, fmt.Sprintf("command names %q, which matches %q, a path denied to file tools", w, pat))
				a.Consequence = "runs the command, which can put the content of " + w + " (denied to file tools) into the model's context"
				break
			}
		}
	}
	if len(a.Reasons) > 0 {
		return Confirm, a
	}
	return Allow, a
}

var patterns sync.Map // string -> *regexp.Regexp or error

func compilePattern(p string) (*regexp.Regexp, error) {
	if v, ok := patterns.Load(p); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
		return nil, v.(error)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		patterns.Store(p, err)
		return nil, err
	}
	patterns.Store(p, re)
	return re, nil
}

// deniedPath reports the first DeniedPaths pattern that p names: the
// cleaned slash path as a whole, or any one of its components.
func (p *Policy) deniedPath(name string) (string, bool) {
	name = strings.TrimSpace(name)
	if name == "" || len(p.DeniedPaths) == 0 {
		return "", false
	}
	clean := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	clean = strings.TrimPrefix(clean, "./")
	parts := strings.Split(strings.Trim(clean, "/"), "/")
	for _, pat := range p.DeniedPaths {
		if ok, _ := path.Match(pat, clean); ok {
			return pat, true
		}
		if ok, _ := path.Match(pat, strings.TrimPrefix(clean, "/")); ok {
			return pat, true
		}
		for _, c := range parts {
			if ok, _ := path.Match(pat, c); ok {
				return pat, true
			}
		}
	}
	return "", false
}

// CommandWords splits a shell command into the words that may name paths:
// it splits at white space, shell operators (; | & < > ( ) `), quotes,
// '=' and ':' (so --file=.env and a PATH-like list yield their parts) and
// drops empty words. It is a heuristic for BH-059, not a shell parser: a
// name assembled at run time is not seen.
func CommandWords(cmd string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(cmd, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\r', ';', '|', '&', '<', '>', '(', ')', '`', '"', '\'', '=', ':', ',', '$', '{', '}':
			return true
		}
		return false
	}) {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// normalize returns the input re-encoded with sorted keys and exact
// numbers, and whether it is a JSON object. Input that does not decode is
// returned trimmed.
func normalize(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return append(json.RawMessage(nil), raw...), false
	}
	if _, ok := v.(map[string]any); !ok {
		return append(json.RawMessage(nil), raw...), false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return append(json.RawMessage(nil), raw...), false
	}
	return b, true
}

// ErrNoConfirmer: a high-impact action came up and nobody can be asked.
var ErrNoConfirmer = errors.New("no way to ask a person in this run")

// Gate is the confirm middleware of the execution plane (ARCHITECTURE.md,
// "One call, end to end", step 4): it runs between the schema check and
// the tool. For a call the Policy marks Confirm it records the Action
// (OnAsk), asks the Confirmer, records the Exchange (OnDecision), and runs
// the call only when approved — the exact input that was shown, never one
// changed afterwards. Each call is asked for on its own: a decision is
// never cached or reused for a later call, identical or similar (seed:
// "a similar historical approval must not be treated as permission for a
// new action").
type Gate struct {
	Policy *Policy
	// Confirmer asks a person. nil refuses every Confirm action at the
	// Authorization stage (ErrNoConfirmer): never proceed unasked.
	Confirmer Confirmer
	// Lookup gives the tool and its MCP server for a call name (a
	// capability.Set's Tool and Server). Required for annotation rules and
	// the early schema check; nil treats every tool as built-in and
	// unknown.
	Lookup func(name string) (t *tool.Tool, server string, ok bool)
	// OnAsk is called before the person is asked, with the action as
	// recorded (target, scope, consequence). May be nil.
	OnAsk func(ctx context.Context, a Action)
	// OnDecision is called with every completed exchange, approved or not,
	// before the call runs. May be nil.
	OnDecision func(ctx context.Context, e Exchange)
	// Now is the clock; default time.Now.
	Now func() time.Time

	schemas sync.Map // *tool.Tool -> *jsonschema.Schema (nil when it does not compile)
}

// Wrap returns next guarded by the gate.
//
// Results: next's result when allowed or approved; an Authorization-stage
// error result when the policy denies the call ("denied by policy: …"),
// the person rejects it ("the user rejected this action; it was not run"),
// or nobody could be asked (ErrNoConfirmer, a Confirmer error, a
// cancelled prompt). A call whose input violates the tool's schema is
// passed to next without asking, so it fails at the Parameters stage
// before anyone is bothered.
func (g *Gate) Wrap(next func(context.Context, *tool.Call) *tool.Result) func(context.Context, *tool.Call) *tool.Result {
	return func(ctx context.Context, call *tool.Call) *tool.Result {
		if call == nil || g.Policy == nil {
			return next(ctx, call)
		}
		s := Subject{Call: call}
		if g.Lookup != nil {
			if t, srv, ok := g.Lookup(call.Name); ok {
				s.Tool, s.Server = t, srv
			}
		}
		verdict, a := g.Policy.Check(s)
		switch verdict {
		case Allow:
			return next(ctx, call)
		case Deny:
			return tool.ErrorResult(tool.Errorf(tool.Authorization, "denied by policy: %s", strings.Join(a.Reasons, "; ")).
				WithHint("this path is off limits to this run; do not try to reach it another way"), call.Name)
		}
		if s.Tool != nil && !g.valid(s.Tool, call.Input) {
			return next(ctx, call) // the schema check refuses it at the Parameters stage
		}
		now := time.Now
		if g.Now != nil {
			now = g.Now
		}
		shown := append(json.RawMessage(nil), call.Input...)
		ex := Exchange{Action: a, AskedAt: now()}
		if g.OnAsk != nil {
			g.OnAsk(ctx, a)
		}
		if g.Confirmer == nil {
			ex.Err = ErrNoConfirmer
		} else {
			ex.Decision, ex.Err = g.Confirmer.Confirm(ctx, a)
		}
		ex.At = now()
		if g.OnDecision != nil {
			g.OnDecision(ctx, ex)
		}
		switch {
		case ex.Err != nil:
			// One message: why nobody decided (a confirmer's own staged
			// error gives its reason and its next step, not a second
			// error inside this one) and the action.
			why, hint := ex.Err.Error(), "do not retry it unconfirmed; explain to the user what you wanted to do and why"
			var te *tool.Error
			if errors.As(ex.Err, &te) {
				why = te.Msg
				if te.Hint != "" {
					hint = te.Hint
				}
			}
			return tool.ErrorResult(tool.Errorf(tool.Authorization,
				"not run: this action needs a person's confirmation, and none could be given: %s. The action: %s", why, a.Summary()).
				WithHint(hint), call.Name)
		case !ex.Decision.Approved:
			msg := "the user rejected this action; it was not run"
			if n := strings.TrimSpace(ex.Decision.Note); n != "" {
				msg += "; they said: " + n
			}
			return tool.ErrorResult(tool.Errorf(tool.Authorization, "%s", msg).
				WithHint("do not repeat it; choose another approach or ask the user what they want"), call.Name)
		}
		// The approval covers exactly the input that was shown.
		exact := *call
		exact.Input = shown
		return next(ctx, &exact)
	}
}

// valid reports whether input passes t's schema (true when the schema
// cannot be compiled here: the tool's own check decides).
func (g *Gate) valid(t *tool.Tool, input json.RawMessage) bool {
	var sch *jsonschema.Schema
	if v, ok := g.schemas.Load(t); ok {
		sch, _ = v.(*jsonschema.Schema)
	} else {
		sch, _, _ = tool.Compile(t.InputSchema())
		g.schemas.Store(t, sch)
	}
	if sch == nil {
		return true
	}
	raw := bytes.TrimSpace(input)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return false
	}
	return sch.Validate(v) == nil
}
