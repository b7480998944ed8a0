package permissions

import (
	"fmt"
	"github.com/aibuddy/aibuddy/tool"
	"path"
	"regexp"
	"strings"
)

// decideBash matches every command of the line (Analyze) against the
// Bash rules, the words that name paths or URLs against the Read, Edit
// and WebFetch rules, and adds the built-in checks: a program computed at
// run time, non-printing characters, an unparsable line.
func (e *Engine) decideBash(req Request, t *tally, wholeAllowed bool) {
	src := req.Access.Command
	ws := e.pc.workspace
	if wd := req.Access.Workdir; wd != "" {
		ws = absPath(e.pc.workspace, wd)
	}
	a := Analyze(src, ws, e.pc.home)
	rules := e.specRules(req, KindBash)
	// Safety checks hold unless bypassPermissions was chosen and no rule
	// could hold a command back anyway.
	safety := !(e.mode == ModeBypass && !e.guarded)
	shown := "`" + Escape(src) + "`"

	if a.Err != nil {
		for _, r := range rules {
			if r.List == ListDeny && r.matchCommand(src, src) {
				t.add(Deny, r.String(), fmt.Sprintf("%s matches %s", shown, r), "remove or narrow "+r.String())
			}
		}
		if safety {
			t.add(Ask, "the shell parser", fmt.Sprintf("the command does not parse as bash (%v), so the rules cannot see its commands", a.Err),
				"write the command so that it parses")
		}
		return
	}
	for _, r := range rules {
		if r.re != nil && r.List == ListAsk && r.re.MatchString(src) {
			t.add(Ask, r.String(), fmt.Sprintf("%s matches %s", shown, r), "remove "+r.String()+" (set approval.confirmCommands)")
		}
	}
	for _, c := range a.Commands {
		forms := c.denyForms()
		text := "`" + Escape(c.Text) + "`"
		allowed := wholeAllowed
		for _, r := range rules {
			hit := false
			for _, f := range forms {
				if r.matchCommand(f, src) {
					hit = true
					break
				}
			}
			switch {
			case !hit:
			case r.List == ListDeny:
				t.add(Deny, r.String(), fmt.Sprintf("%s matches %s", text, r), "remove or narrow "+r.String()+" in the settings")
			case r.List == ListAsk:
				t.add(Ask, r.String(), fmt.Sprintf("%s matches %s", text, r), "remove or narrow "+r.String()+" in the settings")
			case r.List == ListAllow && r.re == nil && c.Computed == "":
				if c.allowedBy(r) {
					allowed = true
					t.add(Allow, r.String(), fmt.Sprintf("%s matches %s", text, r), "")
				}
			}
		}
		if c.Computed != "" {
			if safety {
				t.add(Ask, "program name computed at run time", fmt.Sprintf("%s: %s", text, c.Computed)+"; the rules cannot see what runs",
					"write the program name as a literal word")
			}
			allowed = false
		}
		if c.Unmodelled != "" && e.guarded && safety {
			t.add(Ask, "the option table of "+path.Base(c.Program()), fmt.Sprintf("%s: option %s before the subcommand is not in %s's option table, so rules on its subcommands may not see it",
				text, c.Unmodelled, path.Base(c.Program())), "write the subcommand before that option")
		}
		if !allowed {
			if ok, why := e.autoApproved(c, a); ok {
				allowed = true
				t.add(Allow, ReadOnlyRule, fmt.Sprintf("%s is on the read-only list and names nothing outside the workspace", text), "")
			} else {
				t.open = append(t.open, openPart{kind: KindBash, what: fmt.Sprintf("%s (not auto-approved: %s)", text, why), suggest: suggestBash(c)})
			}
		}
	}
	if len(a.Hidden) > 0 && safety {
		t.add(Ask, "non-printing characters", fmt.Sprintf("the command holds non-printing characters (%s), shown escaped: %s",
			strings.Join(a.Hidden, ", "), shown), "retype the command without them")
	}
	e.pathWords(a, t, safety)
	e.redirectWrites(req, a, t, wholeAllowed)
}

// redirectWrites treats a file a redirection writes as an edit: an allow
// rule for Edit on it (or acceptEdits, inside the workspace) lets it
// run; otherwise the mode decides it like any edit. A target that is not
// a literal word is decided like an edit outside the workspace.
func (e *Engine) redirectWrites(req Request, a *Analysis, t *tally, wholeAllowed bool) {
	if wholeAllowed {
		return
	}
	edit := e.specRules(Request{Access: accessKind(KindEdit)}, KindEdit)
	for _, w := range a.Writes {
		abs, ok := "", false
		if w.Target != "" {
			abs, ok = e.resolveWord(w.Target, w.Dir, a)
		}
		allowed := false
		if ok {
			for _, r := range edit {
				if r.List == ListAllow && r.pathOK && r.path.Match(abs) {
					allowed = true
				}
			}
		}
		if !allowed {
			suggest := ""
			if w.Target != "" {
				suggest = "Edit(" + ruleFile(w.Target) + ")"
			}
			t.open = append(t.open, openPart{kind: KindEdit, what: w.Why, inside: ok && e.insideDirs(abs), suggest: suggest})
		}
	}
}

// denyForms are the forms of c that deny and ask rules are matched
// against: as written, without its wrappers, normalized, and normalized
// with the program's base name (/usr/bin/curl is curl).
func (c Command) denyForms() []string {
	forms := []string{c.Text}
	if len(c.Words) > 0 {
		inner := strings.Join(c.Words, " ")
		forms = append(forms, inner, c.Norm)
		if b := path.Base(c.Words[0]); b != c.Words[0] {
			forms = append(forms, b+strings.TrimPrefix(c.Norm, c.Words[0]), b+strings.TrimPrefix(inner, c.Words[0]))
		}
	}
	return forms
}

// allowedBy reports whether allow rule r covers c: its normalized form or
// its words without wrappers, and for a privileged wrapper (sudo) the
// command as written too.
func (c Command) allowedBy(r *Rule) bool {
	if len(c.Words) == 0 {
		return false
	}
	if !r.bash.match(c.Norm) && !r.bash.match(strings.Join(c.Words, " ")) {
		return false
	}
	if c.Privileged && !r.bash.match(c.Text) {
		return false
	}
	return true
}

// matchCommand matches one form of a command (or, for a confirmCommands
// pattern, the form and the whole line).
func (r *Rule) matchCommand(form, line string) bool {
	if r.re != nil {
		return r.re.MatchString(form)
	}
	return r.bash.match(form)
}

// suggestBash proposes an allow rule for c: its first two words.
func suggestBash(c Command) string {
	f := strings.Fields(c.Norm)
	if len(f) == 0 {
		return ""
	}
	if len(f) > 2 {
		f = f[:2]
	}
	if len(f) == 2 && !subcommandRE.MatchString(f[1]) {
		f = f[:1]
	}
	return "Bash(" + strings.Join(f, " ") + " *)"
}

// ReadOnlyRule names the default read-only list when it decides.
const ReadOnlyRule = "the read-only command list (permissions.ReadOnlyPrograms)"

var subcommandRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// autoApproved reports whether c runs without a rule: it is on the
// read-only list, the line writes nothing and prints no secrets, and every
// path it names is inside the workspace and no credential path.
func (e *Engine) autoApproved(c Command, a *Analysis) (bool, string) {
	if ok, why := readOnly(c); !ok {
		return false, why
	}
	if len(a.Writes) > 0 {
		return false, a.Writes[0].Why
	}
	if len(a.Secrets) > 0 {
		return false, a.Secrets[0]
	}
	for _, w := range c.Words[1:] {
		for _, p := range candidatePaths(w) {
			abs, ok := e.resolveWord(p, c.Dir, a)
			if !ok || !e.insideDirs(abs) {
				return false, fmt.Sprintf("it names %s, outside the workspace", p)
			}
		}
	}
	return true, ""
}

// candidatePaths are the parts of an argument that may be a path for
// the inside-the-workspace check: the word, or an option's value.
func candidatePaths(w string) []string {
	if strings.Contains(w, "://") {
		return nil
	}
	if strings.HasPrefix(w, "-") {
		if _, v, ok := strings.Cut(w, "="); ok && v != "" {
			return []string{v}
		}
		return nil
	}
	return []string{w}
}

// resolveWord makes a path word absolute: relative to dir (a cd earlier
// in the line; "" the start folder) or to the workspace. ok is false when
// the folder cannot be known.
func (e *Engine) resolveWord(w, dir string, a *Analysis) (string, bool) {
	w = expandHome(w, e.pc.home)
	if path.IsAbs(w) {
		return path.Clean(w), true
	}
	switch dir {
	case "?":
		return "", false
	case "":
		return absPath(e.pc.workspace, w), true
	}
	return absPath(dir, w), true
}

// pathWords checks the words of the line that name paths or URLs: a word
// naming a path a Read or Edit rule denies or asks for, or a URL whose
// host a WebFetch rule denies or asks for, makes the command ask
// (BH-059: the shell is not path-sandboxed by these rules, so the person
// decides).
func (e *Engine) pathWords(a *Analysis, t *tally, safety bool) {
	read := e.specRules(Request{Access: accessKind(KindRead)}, KindRead)
	edit := e.specRules(Request{Access: accessKind(KindEdit)}, KindEdit)
	fetch := e.specRules(Request{Access: accessKind(KindWebFetch)}, KindWebFetch)
	for _, pw := range a.Paths {
		if h := hostOf(pw.Word); h != "" {
			for _, r := range fetch {
				if r.List != ListAllow && r.domain != "" && matchDomain(r.domain, h) {
					t.add(Ask, r.String(), fmt.Sprintf("the command names %s, whose host %s %s", pw.Word, r, verb(r.List)),
						"fetch it another way, or change "+r.String())
				}
			}
			continue
		}
		abs, ok := e.resolveWord(pw.Word, pw.Dir, a)
		if !ok {
			abs = absPath(e.pc.workspace, expandHome(pw.Word, e.pc.home))
		}
		for _, r := range append(read, edit...) {
			if r.List == ListAllow || !r.pathOK || !r.path.Match(abs) {
				continue
			}
			if r.builtin && !safety {
				continue
			}
			if r.builtin && e.mode == ModeBypass {
				continue
			}
			t.add(Ask, r.String(), fmt.Sprintf("the command names %s, which %s %s; the shell is not path-sandboxed by these rules, so a person decides",
				pw.Word, r, verb(r.List)), "leave "+pw.Word+" out of the command, or change "+r.String())
			break
		}
	}
}

func verb(l List) string {
	if l == ListDeny {
		return "denies"
	}
	return "asks for"
}

func accessKind(k string) tool.Access { return tool.Access{Kind: k} }
