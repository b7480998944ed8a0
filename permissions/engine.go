package permissions

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aibuddy/aibuddy/tool"
)

// Mode is the permissions block's defaultMode: what happens to a call no
// rule decides.
type Mode string

// Modes (Claude Code's names). ModeUnset is a run without a permissions
// block: aibuddy's own default, where what no rule holds back runs.
const (
	ModeUnset       Mode = ""
	ModeDefault     Mode = "default"           // reads in the workspace and read-only commands run; the rest asks
	ModeAcceptEdits Mode = "acceptEdits"       // default, and edits inside the workspace run
	ModePlan        Mode = "plan"              // only read-only tools are offered; nothing else runs
	ModeBypass      Mode = "bypassPermissions" // everything runs that no deny or ask rule holds back
	ModeDontAsk     Mode = "dontAsk"           // what would ask is denied
)

// Settings is a permissions block in Claude Code's syntax:
//
//	{"permissions": {"allow": ["Bash(npm run test:*)"], "ask": ["Bash(git push:*)"],
//	  "deny": ["Read(./.env)", "Bash(curl:*)"], "defaultMode": "default"}}
type Settings struct {
	Allow       []string `json:"allow,omitempty"`
	Ask         []string `json:"ask,omitempty"`
	Deny        []string `json:"deny,omitempty"`
	DefaultMode Mode     `json:"defaultMode,omitempty"`
	// AdditionalDirectories are folders outside the workspace that count
	// as inside it for reads, edits and read-only commands (relative to
	// the settings file's folder).
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	// DisableBypassPermissionsMode "disable" refuses defaultMode
	// bypassPermissions (Claude Code's managed-settings key).
	DisableBypassPermissionsMode string `json:"disableBypassPermissionsMode,omitempty"`
}

// Options builds an Engine: the permissions block and today's approval
// keys, which become rules of the same engine (see the package
// documentation for the mapping).
type Options struct {
	// Settings is the permissions block; nil means none (ModeUnset).
	Settings *Settings
	// Workspace is the folder bare and "./" patterns and relative paths are
	// relative to. Default: the current folder.
	Workspace string
	// SettingsDir is the folder of the settings file ("/path" patterns).
	// Default: Workspace.
	SettingsDir string
	// Home is the home folder ("~/" patterns). Default: os.UserHomeDir.
	Home string

	// ConfirmTools (approval.confirmTools) are tool names whose every
	// call asks.
	ConfirmTools []string
	// ConfirmCommands (approval.confirmCommands) are RE2 patterns; a Bash
	// command line, or any one of its commands as written or normalized,
	// matching one asks.
	ConfirmCommands []string
	// DeniedPaths (approval.deniedPaths) are path patterns denied to Read
	// and Edit alike; a Bash command naming one asks.
	DeniedPaths []string
	// ConfirmDestructiveMCP asks for MCP tools annotated
	// destructiveHint: true; ConfirmUnannotatedMCP for MCP tools with
	// neither hint.
	ConfirmDestructiveMCP, ConfirmUnannotatedMCP bool
	// NoCredentialPaths drops the built-in ask rules on credential paths
	// (CredentialPaths).
	NoCredentialPaths bool
}

// CredentialPaths are the built-in ask rules for Read: known credential
// files and folders outside the workspace (BH-086). A command or read
// naming one asks, in every mode but bypassPermissions.
var CredentialPaths = []string{"~/.ssh/**", "~/.aws/**", "~/.gnupg/**", "~/.config/gcloud/**", "~/.azure/**",
	"~/.kube/config", "~/.docker/config.json", "~/.netrc", "~/.npmrc", "~/.pypirc", "~/.git-credentials",
	"~/.config/gh/hosts.yml", "//etc/shadow", "//etc/gshadow", "//etc/sudoers"}

// Engine decides calls by rules. It is immutable and safe for concurrent
// use.
type Engine struct {
	mode      Mode
	pc        pathContext
	dirs      []string // workspace and additional directories, absolute
	rules     []*Rule
	guarded   bool // some deny or ask rule can hold a Bash command back
	notes     []string
	denyPaths *PathRules
}

// New compiles the rules. Errors name the settings entry at fault
// ("permissions.allow[2] \"Bash(\": ...") and are joined; a rule that does
// not compile is left out, and callers should refuse to start with it
// (security fails closed).
func New(o Options) (*Engine, error) {
	ws := o.Workspace
	if ws == "" {
		ws, _ = os.Getwd()
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	e := &Engine{pc: pathContext{workspace: cleanAbs(ws), home: cleanAbs(home)}}
	e.pc.settingsDir = e.pc.workspace
	if o.SettingsDir != "" {
		e.pc.settingsDir = cleanAbs(o.SettingsDir)
	}
	e.dirs = []string{e.pc.workspace}
	var errs []error
	if s := o.Settings; s != nil {
		e.mode = s.DefaultMode
		if e.mode == "" {
			e.mode = ModeDefault
		}
		if e.mode == ModeBypass && s.DisableBypassPermissionsMode == "disable" {
			errs = append(errs, fmt.Errorf(`permissions.defaultMode "bypassPermissions" is disabled by permissions.disableBypassPermissionsMode "disable"`))
			e.mode = ModeDefault
		}
		switch e.mode {
		case ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass, ModeDontAsk:
		default:
			errs = append(errs, fmt.Errorf("permissions.defaultMode %q: want default, acceptEdits, plan, bypassPermissions or dontAsk", s.DefaultMode))
			e.mode = ModeDefault
		}
		for _, d := range s.AdditionalDirectories {
			if !filepath.IsAbs(d) {
				d = filepath.Join(e.pc.settingsDir, d)
			}
			e.dirs = append(e.dirs, cleanAbs(d))
		}
		for _, l := range []struct {
			list  List
			rules []string
		}{{ListDeny, s.Deny}, {ListAsk, s.Ask}, {ListAllow, s.Allow}} {
			for i, text := range l.rules {
				r, err := parseRule(l.list, fmt.Sprintf("permissions.%s[%d]", l.list, i), text, e.pc)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				e.rules = append(e.rules, r)
				if r.tool != "Bash" && kindOf(r.tool) == "" && !strings.HasPrefix(r.tool, "mcp__") && r.hasSpec && !r.pathOK {
					e.notes = append(e.notes, fmt.Sprintf("%s: %s", r, "aibuddy reads this specifier only for its own tool names"))
				}
			}
		}
	}
	for i, t := range o.ConfirmTools {
		e.rules = append(e.rules, &Rule{List: ListAsk, Source: fmt.Sprintf("approval.confirmTools[%d]", i), Text: t, tool: t})
	}
	for i, p := range o.ConfirmCommands {
		r := &Rule{List: ListAsk, Source: fmt.Sprintf("approval.confirmCommands[%d]", i), Text: p, tool: "Bash", hasSpec: true}
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q does not compile: %v", r.Source, p, err))
			re = regexp.MustCompile(``) // fail closed: it asks for every command
		}
		r.re = re
		e.rules = append(e.rules, r)
	}
	for i, p := range o.DeniedPaths {
		pat, err := newLegacyPattern(p, e.pc)
		if err != nil {
			errs = append(errs, fmt.Errorf("approval.deniedPaths[%d] %q: %v", i, p, err))
			continue
		}
		src := fmt.Sprintf("approval.deniedPaths[%d]", i)
		for _, kind := range []string{"Read", "Edit"} {
			e.rules = append(e.rules, &Rule{List: ListDeny, Source: src, Text: p, tool: kind, hasSpec: true, path: pat, pathOK: true})
		}
	}
	if o.ConfirmDestructiveMCP {
		e.rules = append(e.rules, &Rule{List: ListAsk, Source: "approval.confirmDestructiveMCP", Text: "true", hint: "destructive"})
	}
	if o.ConfirmUnannotatedMCP {
		e.rules = append(e.rules, &Rule{List: ListAsk, Source: "approval.confirmUnannotatedMCP", Text: "true", hint: "unannotated"})
	}
	if !o.NoCredentialPaths {
		for _, p := range CredentialPaths {
			pat, err := newPattern(p, e.pc)
			if err != nil {
				continue // no home folder: the ~ rules cannot hold anything
			}
			e.rules = append(e.rules, &Rule{List: ListAsk, Source: "built-in credential paths", Text: "Read(" + p + ")",
				tool: "Read", hasSpec: true, path: pat, pathOK: true, builtin: true})
		}
	}
	e.denyPaths = &PathRules{workspace: e.pc.workspace}
	for _, r := range e.rules {
		if r.List == ListDeny && r.tool == "Bash" {
			e.guarded = true
		}
		if (r.List == ListDeny || r.List == ListAsk) && !r.builtin && (r.tool == "Bash" || r.re != nil) {
			e.guarded = true
		}
		if r.List == ListDeny && r.pathOK && (kindOf(r.tool) == KindRead || kindOf(r.tool) == KindEdit) {
			e.denyPaths.rules = append(e.denyPaths.rules, pathRule{pat: r.path, name: r.String(),
				read: kindOf(r.tool) == KindRead, edit: kindOf(r.tool) == KindEdit})
		}
	}
	return e, errors.Join(errs...)
}

// Mode is the engine's mode.
func (e *Engine) Mode() Mode { return e.mode }

// Notes are warnings about rules that parse but cannot match anything
// here.
func (e *Engine) Notes() []string { return append([]string(nil), e.notes...) }

// Rules are the compiled rules, deny first, then ask, then allow in the
// order written, then the rules from today's approval keys.
func (e *Engine) Rules() []*Rule { return append([]*Rule(nil), e.rules...) }

// DeniedPaths are the path patterns of the deny rules for Read and Edit
// (permissions.deny Read(...)/Edit(...) and approval.deniedPaths): what
// the file tools check again on the object they actually open, and what
// their walks leave out.
func (e *Engine) DeniedPaths() *PathRules { return e.denyPaths }

// Workspace is the folder relative paths are resolved against.
func (e *Engine) Workspace() string { return e.pc.workspace }

// Verdict is what the rules say about one call.
type Verdict int

// Verdicts, weakest first.
const (
	Allow Verdict = iota // run it
	Ask                  // a person decides first
	Deny                 // refuse it
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// Request is one call as the rules see it.
type Request struct {
	Tool        string // the tool's wire name
	Server      string // the MCP server it comes from; "" for a built-in tool
	Access      tool.Access
	Annotations *tool.Annotations
}

// Decision is the outcome for one call, with what decided it.
type Decision struct {
	Verdict Verdict
	// Rule names what decided: a rule (`permissions.deny[0]
	// "Bash(curl:*)"`), a built-in check ("program name computed at run
	// time") or the mode (`permissions.defaultMode "default"`).
	Rule string
	// Reasons are every finding of that verdict, the deciding one first,
	// one sentence each.
	Reasons []string
	// Fix says what to change in the settings for another outcome.
	Fix string
}

// finding is one reason for a verdict.
type finding struct {
	v    Verdict
	rule string
	why  string
	fix  string
}

type tally struct {
	found []finding
	// open are the parts no rule allowed (the mode decides them), each
	// with the kind whose mode default applies and a suggested rule.
	open []openPart
}

type openPart struct {
	kind    string // Bash, Read, Edit, WebFetch, "mcp", "tool"
	what    string
	inside  bool // a path inside the workspace (Read/Edit)
	suggest string
}

func (t *tally) add(v Verdict, rule, why, fix string) {
	t.found = append(t.found, finding{v: v, rule: rule, why: why, fix: fix})
}

// Decide decides one call: deny beats ask beats allow; a part of the call
// no rule decides gets the mode's default.
func (e *Engine) Decide(req Request) Decision {
	var t tally
	kind := req.Access.Kind
	// Rules on the tool as a whole (no specifier): Bash, execute,
	// mcp__github, write_file.
	var allowedWhole string
	for _, r := range e.rules {
		if r.hasSpec || r.hint != "" || !e.nameMatches(r, req) {
			continue
		}
		switch r.List {
		case ListDeny:
			t.add(Deny, r.String(), fmt.Sprintf("the tool %s is denied by %s", req.Tool, r), "remove "+r.String()+" from the settings to allow the tool")
		case ListAsk:
			t.add(Ask, r.String(), fmt.Sprintf("%s asks for every call of %s", r, req.Tool), "remove "+r.String()+" from the settings")
		case ListAllow:
			if allowedWhole == "" {
				allowedWhole = r.String()
			}
		}
	}
	switch kind {
	case KindBash:
		e.decideBash(req, &t, allowedWhole != "")
	case KindRead, KindEdit:
		e.decidePaths(req, &t, allowedWhole != "")
	case KindWebFetch:
		e.decideFetch(req, &t, allowedWhole != "")
	default:
		e.decideTool(req, &t, allowedWhole != "")
	}
	return e.conclude(req, &t, allowedWhole)
}

func (e *Engine) conclude(req Request, t *tally, allowedWhole string) Decision {
	for _, want := range []Verdict{Deny, Ask} {
		var d Decision
		for _, f := range t.found {
			if f.v != want {
				continue
			}
			if d.Rule == "" {
				d = Decision{Verdict: want, Rule: f.rule, Fix: f.fix}
			}
			if !contains(d.Reasons, f.why) {
				d.Reasons = append(d.Reasons, f.why)
			}
		}
		if d.Rule != "" {
			if want == Ask && (e.mode == ModeDontAsk || e.mode == ModePlan) {
				// Nobody is asked in these modes: what would ask is denied.
				d.Verdict = Deny
				d.Reasons = append(d.Reasons, fmt.Sprintf("permissions.defaultMode %q denies what would ask", string(e.mode)))
			}
			return d
		}
	}
	if len(t.open) == 0 {
		d := Decision{Verdict: Allow, Rule: allowedWhole}
		for _, f := range t.found {
			if d.Rule == "" || d.Rule == ReadOnlyRule && f.rule != ReadOnlyRule {
				d.Rule = f.rule // a rule that was written names the outcome before the built-in list
			}
			d.Reasons = append(d.Reasons, f.why)
		}
		return d
	}
	// The mode decides what no rule did.
	worst := Allow
	var reasons []string
	var suggest []string
	for _, p := range t.open {
		v := e.modeDefault(p, req)
		if v > worst {
			worst, reasons, suggest = v, nil, nil
		}
		if v == worst {
			reasons = append(reasons, p.what)
			if p.suggest != "" && !contains(suggest, p.suggest) {
				suggest = append(suggest, p.suggest)
			}
		}
	}
	mode := e.mode
	d := Decision{Verdict: worst, Rule: fmt.Sprintf("permissions.defaultMode %q", string(mode))}
	if mode == ModeUnset {
		d.Rule = "no permissions block (aibuddy's default: run what no rule holds back)"
	}
	for _, r := range reasons {
		d.Reasons = append(d.Reasons, r+"; no rule decides it, so "+d.Rule+" does")
	}
	if worst != Allow {
		fix := "add an allow rule to permissions.allow"
		if len(suggest) > 0 {
			fix += " such as " + strings.Join(quoteAll(suggest), " or ")
		}
		switch mode {
		case ModePlan:
			fix = "plan mode runs only read-only tools; set permissions.defaultMode to \"default\" to run it"
		default:
			fix += " (a matching deny or ask rule still wins)"
		}
		d.Fix = fix
	}
	return d
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return out
}

// modeDefault is what the mode says about a part no rule decided.
func (e *Engine) modeDefault(p openPart, req Request) Verdict {
	switch e.mode {
	case ModeUnset, ModeBypass:
		return Allow
	}
	var v Verdict
	switch p.kind {
	case KindRead:
		v = Allow
		if !p.inside {
			v = Ask
		}
	case KindEdit:
		v = Ask
		if e.mode == ModeAcceptEdits && p.inside {
			v = Allow
		}
		if e.mode == ModePlan {
			v = Deny
		}
	case KindBash:
		v = Ask
		if e.mode == ModePlan {
			v = Deny
		}
	case KindWebFetch:
		v = Ask
	case "tool":
		v = Allow // a built-in tool with no outside effect (view_tool_call, view_skill, ...)
		if e.mode == ModePlan && (req.Annotations == nil || !req.Annotations.ReadOnlyHint) {
			v = Deny
		}
	default: // an MCP tool
		v = Ask
		if req.Annotations != nil && req.Annotations.ReadOnlyHint {
			v = Allow
		} else if e.mode == ModePlan {
			v = Deny
		}
	}
	if e.mode == ModeDontAsk && v == Ask {
		v = Deny
	}
	return v
}

// nameMatches reports whether rule r's tool part names the call's tool.
func (e *Engine) nameMatches(r *Rule, req Request) bool {
	name := r.tool
	if name == "" {
		return false
	}
	if k := kindOf(name); k != "" {
		return k == req.Access.Kind
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if req.Server == "" {
			return false
		}
		srv := sanitize(req.Server)
		switch {
		case rest == req.Server || rest == srv || rest == srv+"__*" || rest == req.Server+"__*":
			return true
		case rest == req.Tool:
			return true
		case strings.HasSuffix(rest, "*"):
			return strings.HasPrefix(req.Tool, strings.TrimSuffix(rest, "*"))
		}
		return false
	}
	if name == req.Tool {
		return true
	}
	if p, ok := strings.CutSuffix(name, "*"); ok && p != "" {
		return strings.HasPrefix(req.Tool, p)
	}
	if req.Server != "" && (name == req.Server || name == req.Server+"__*") {
		return true
	}
	return false
}

// sanitize is mcpclient's name rule: every character outside
// [A-Za-z0-9_-] becomes '_'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// specRules are the rules with a specifier that apply to the call's tool,
// read with the grammar of kind.
func (e *Engine) specRules(req Request, kind string) []*Rule {
	var out []*Rule
	for _, r := range e.rules {
		if !r.hasSpec || r.hint != "" {
			continue
		}
		if k := kindOf(r.tool); k != "" {
			if k == kind && (kind == req.Access.Kind || kind == KindRead || kind == KindEdit || kind == KindWebFetch) {
				out = append(out, r)
			}
			continue
		}
		if e.nameMatches(r, req) {
			out = append(out, r)
		}
	}
	return out
}

// insideDirs reports whether abs is inside the workspace or an additional
// directory.
func (e *Engine) insideDirs(abs string) bool {
	for _, d := range e.dirs {
		if inside(d, abs) {
			return true
		}
	}
	return false
}

func (e *Engine) decidePaths(req Request, t *tally, wholeAllowed bool) {
	kind := req.Access.Kind
	paths := req.Access.Paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		abs := absPath(e.pc.workspace, expandHome(p, e.pc.home))
		in := e.insideDirs(abs)
		allowed := wholeAllowed
		for _, r := range e.specRules(req, kind) {
			if !r.pathOK || !r.path.Match(abs) {
				continue
			}
			if r.builtin && e.mode == ModeBypass {
				continue
			}
			switch r.List {
			case ListDeny:
				t.add(Deny, r.String(), fmt.Sprintf("%s is denied by %s", p, r), "remove or narrow "+r.String()+" in the settings")
			case ListAsk:
				t.add(Ask, r.String(), fmt.Sprintf("%s asks before %s is touched", r, p), "remove or narrow "+r.String()+" in the settings")
			case ListAllow:
				allowed = true
			}
		}
		if !allowed {
			what := fmt.Sprintf("%s %s", map[bool]string{true: "reading", false: "editing"}[kind == KindRead], p)
			if !in {
				what += " (outside the workspace)"
			}
			t.open = append(t.open, openPart{kind: kind, what: what, inside: in, suggest: kind + "(" + ruleFile(p) + ")"})
		}
	}
}

func ruleFile(p string) string {
	if path.IsAbs(p) {
		return "/" + p
	}
	return "./" + strings.TrimPrefix(p, "./")
}

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return home + "/" + rest
	}
	return p
}

func (e *Engine) decideFetch(req Request, t *tally, wholeAllowed bool) {
	host := hostOf(req.Access.URL)
	allowed := wholeAllowed
	for _, r := range e.specRules(req, KindWebFetch) {
		if r.domain == "" || !matchDomain(r.domain, host) {
			continue
		}
		switch r.List {
		case ListDeny:
			t.add(Deny, r.String(), fmt.Sprintf("fetching %s is denied by %s", req.Access.URL, r), "remove or narrow "+r.String())
		case ListAsk:
			t.add(Ask, r.String(), fmt.Sprintf("%s asks before fetching %s", r, req.Access.URL), "remove "+r.String())
		case ListAllow:
			allowed = true
		}
	}
	if !allowed {
		t.open = append(t.open, openPart{kind: KindWebFetch, what: "fetching " + req.Access.URL, suggest: "WebFetch(domain:" + host + ")"})
	}
}

func (e *Engine) decideTool(req Request, t *tally, wholeAllowed bool) {
	ann := req.Annotations
	if req.Server != "" {
		for _, r := range e.rules {
			switch {
			case r.hint == "destructive" && ann != nil && ann.DestructiveHint != nil && *ann.DestructiveHint:
				t.add(Ask, r.String(), "the MCP server marks the tool destructive (destructiveHint), and "+r.Source+" asks for such tools",
					"set "+r.Source+" to false, or allow the tool with an allow rule... an ask rule wins over allow, so change the setting")
			case r.hint == "unannotated" && (ann == nil || (!ann.ReadOnlyHint && ann.DestructiveHint == nil)):
				t.add(Ask, r.String(), "the MCP tool is not annotated read-only or non-destructive (MCP default: destructive), and "+r.Source+" asks for such tools",
					"set "+r.Source+" to false")
			}
		}
	}
	if wholeAllowed {
		return
	}
	if req.Server == "" {
		t.open = append(t.open, openPart{kind: "tool", what: "the tool " + req.Tool, suggest: req.Tool})
		return
	}
	t.open = append(t.open, openPart{kind: "mcp", what: fmt.Sprintf("the MCP tool %s of server %s", req.Tool, req.Server),
		suggest: "mcp__" + req.Tool})
}

// Offered reports whether a tool is offered to the model at all
// (capability plane), and if not why: a bare tool name in a deny rule
// removes the tool (Claude Code: "removes the tool from Claude's context
// entirely"), and plan mode offers only tools whose access kind is Read or
// whose annotations say readOnlyHint. server is the tool's MCP server (""
// for a built-in tool).
func (e *Engine) Offered(t *tool.Tool, server string) (bool, string) {
	req := Request{Tool: t.Name(), Server: server, Access: tool.Access{Kind: t.AccessKind()}, Annotations: t.Annotations()}
	for _, r := range e.rules {
		if r.List == ListDeny && !r.hasSpec && r.hint == "" && e.nameMatches(r, req) {
			return false, "denied as a whole by " + r.String()
		}
	}
	if e.mode == ModePlan {
		ro := req.Annotations != nil && req.Annotations.ReadOnlyHint
		if req.Access.Kind != KindRead && !ro {
			return false, `permissions.defaultMode "plan" offers only read-only tools (access kind Read or readOnlyHint)`
		}
	}
	return true, ""
}
