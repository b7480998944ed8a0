package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aibuddy/aibuddy/permissions"
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
	// Rule names what decided: a permission rule with its settings list
	// (`permissions.deny[0] "Bash(curl:*)"`), a built-in check ("program
	// name computed at run time") or the mode.
	Rule string
	// Fix says what to change in the settings for another outcome.
	Fix string
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

// Policy says which actions are high impact. It is the
// permissions.Engine built from a Claude Code-style permissions block
// (Permissions) and today's approval keys, which become rules of that one
// engine (package permissions documents the mapping). The zero value
// confirms nothing; [DefaultPolicy] is what `aibuddy run` uses. A Policy
// must not be changed after its first Check.
type Policy struct {
	// Tools are tool names whose every call is confirmed
	// (approval.confirmTools: ask rules on those names).
	Tools []string
	// Destructive confirms MCP tools whose annotations say
	// destructiveHint: true explicitly. (The MCP spec's default for an
	// unannotated, non-read-only tool is destructive too; set
	// Unannotated to follow it.)
	Destructive bool
	// Unannotated confirms MCP tools that have no destructiveHint and no
	// readOnlyHint (the MCP default: "destructive").
	Unannotated bool
	// CommandPatterns are regular expressions (RE2) matched against a
	// shell command line and each of its commands, as written and
	// normalized (approval.confirmCommands: ask rules for Bash).
	CommandPatterns []string
	// DeniedPaths are path patterns denied to the file tools
	// (approval.deniedPaths: deny rules for Read and Edit): ".env",
	// ".env.*", "*.pem", "secrets/*". A file call naming one is refused at
	// the Authorization stage; a shell command whose words name one goes
	// to confirm (BH-059: `cat .env`, `grep KEY .env`, `sed -n 1p .env`).
	// The shell is not path-sandboxed by these rules: a command that
	// builds the name at run time (python3 -c "open('.e'+'nv')") is caught
	// only by an OS-level sandbox.
	DeniedPaths []string
	// Permissions is the settings' permissions block in Claude Code's
	// syntax; nil means none (what no rule holds back runs).
	Permissions *permissions.Settings
	// Workspace is the folder relative paths and "./" rules are relative
	// to; default the current folder. SettingsDir is the settings file's
	// folder ("/path" rules); default Workspace. Home is the home folder
	// ("~/" rules); default the user's.
	Workspace, SettingsDir, Home string

	once sync.Once
	eng  *permissions.Engine
	err  error
}

// DefaultPolicy is the policy of `aibuddy run`: destructive MCP tools,
// shell commands that delete recursively, force-push, hard-reset, rewrite
// disks or pipe downloads into a shell, and any command naming a
// credentials file (.env, .env.*, *.pem, *.key, id_rsa, id_ed25519,
// .netrc, .npmrc, credentials.json, and the built-in credential paths of
// permissions.CredentialPaths).
func DefaultPolicy() *Policy {
	return &Policy{
		Destructive:     true,
		CommandPatterns: DefaultCommandPatterns(),
		DeniedPaths:     DefaultDeniedPaths(),
	}
}

// DefaultCommandPatterns are the default approval.confirmCommands.
func DefaultCommandPatterns() []string {
	return []string{
		`\brm\s+(-[A-Za-z]*[rRf]|--recursive|--force)`,
		`\bgit\s+push\b.*(\s-f\b|--force)`,
		`\bgit\s+reset\s+--hard\b`,
		`\bgit\s+clean\s+-[A-Za-z]*f`,
		`\b(mkfs|dd|shred)\b`,
		`\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b`,
		`\bsudo\b`,
		`\bchmod\s+-R\b`,
	}
}

// DefaultDeniedPaths are the default approval.deniedPaths.
func DefaultDeniedPaths() []string {
	return []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", ".netrc", ".npmrc", "credentials.json"}
}

// Engine returns the rule engine of the policy, compiled once. The error
// names every settings entry that does not compile; such a policy denies
// every call (security fails closed).
func (p *Policy) Engine() (*permissions.Engine, error) {
	p.once.Do(func() {
		p.eng, p.err = permissions.New(permissions.Options{
			Settings: p.Permissions, Workspace: p.Workspace, SettingsDir: p.SettingsDir, Home: p.Home,
			ConfirmTools: p.Tools, ConfirmCommands: p.CommandPatterns, DeniedPaths: p.DeniedPaths,
			ConfirmDestructiveMCP: p.Destructive, ConfirmUnannotatedMCP: p.Unannotated,
		})
	})
	return p.eng, p.err
}

// Subject is a call as the policy sees it: the tool (for its declared
// access and its annotations), the MCP server it comes from ("" for a
// built-in tool) and the call.
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

// Check classifies one call by the tool's declared access (tool.Access):
// the permission rules decide (permissions.Engine.Decide). For Confirm it
// returns the Action to put to a person; for Deny, an Action whose
// Reasons say why. Both name the rule that decided (Action.Rule) and what
// to change (Action.Fix). Input that is not a JSON object is allowed
// through (the tool's own schema check refuses it at the Parameters
// stage).
func (p *Policy) Check(s Subject) (Verdict, Action) {
	if p == nil || s.Call == nil {
		return Allow, Action{}
	}
	input, obj := normalize(s.Call.Input)
	a := Action{CallID: s.Call.ID, Tool: s.Call.Name, Input: input}
	if !obj {
		return Allow, a
	}
	acc, err := s.Tool.Access(input)
	if err != nil {
		return Allow, a // the schema check refuses it at the Parameters stage
	}
	describe(&a, s, acc, input)
	eng, err := p.Engine()
	if err != nil {
		a.Rule = "the permission settings"
		a.Reasons = []string{fmt.Sprintf("the permission rules do not compile (%v), so every call is refused", err)}
		a.Fix = "fix the rules named above in the settings"
		return Deny, a
	}
	var ann *tool.Annotations
	if s.Tool != nil {
		ann = s.Tool.Annotations()
	}
	d := eng.Decide(permissions.Request{Tool: s.Call.Name, Server: s.Server, Access: acc, Annotations: ann})
	a.Rule, a.Reasons, a.Fix = d.Rule, d.Reasons, d.Fix
	switch d.Verdict {
	case permissions.Deny:
		return Deny, a
	case permissions.Ask:
		return Confirm, a
	}
	return Allow, a
}

// describe fills in the target, scope and consequence of a from what the
// call reaches.
func describe(a *Action, s Subject, acc tool.Access, input json.RawMessage) {
	switch acc.Kind {
	case permissions.KindBash:
		a.Target = "`" + permissions.Escape(acc.Command) + "`"
		a.Scope = "workspace shell (not path-sandboxed)"
		if acc.Workdir != "" {
			a.Scope += ", in " + acc.Workdir
		}
		a.Consequence = "runs the command with your user's rights; its effects on files, network and processes are whatever the command does"
	case permissions.KindRead, permissions.KindEdit:
		target := strings.Join(acc.Paths, ", ")
		if target == "" {
			target = "."
		}
		a.Target, a.Scope = target, "workspace file"
		if acc.Kind == permissions.KindEdit {
			a.Consequence = "creates, replaces or changes " + target
			var in struct {
				Content *string `json:"content"`
			}
			if json.Unmarshal(input, &in) == nil && in.Content != nil {
				a.Consequence = fmt.Sprintf("creates or replaces %s with %d bytes", target, len(*in.Content))
			}
		} else {
			a.Consequence = "reads " + target + " into the model's context"
		}
	case permissions.KindWebFetch:
		a.Target, a.Scope, a.Consequence = acc.URL, "network", "fetches the address into the model's context"
	default:
		if s.Server != "" {
			a.Target = s.Call.Name
			a.Scope = "MCP server " + s.Server
			a.Consequence = "calls the server's tool, whose effect the server decides"
			return
		}
		a.Target, a.Scope, a.Consequence = s.Call.Name, "built-in tool", "runs the tool"
	}
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
			hint := "do not try to reach it another way"
			if a.Fix != "" {
				hint += "; the user can " + a.Fix
			}
			return tool.ErrorResult(tool.Errorf(tool.Authorization, "denied by policy (%s): %s", a.Rule, strings.Join(a.Reasons, "; ")).
				WithHint(hint), call.Name)
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
			if a.Fix != "" {
				hint += "; to run it without asking, the user can " + a.Fix
			}
			return tool.ErrorResult(tool.Errorf(tool.Authorization,
				"not run: this action needs a person's confirmation (%s: %s), and none could be given: %s. The action: %s",
				a.Rule, strings.Join(a.Reasons, "; "), why, a.Summary()).
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
