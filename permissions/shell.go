package permissions

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command of a shell line as the rules see it: every
// command of a list, pipeline, subshell, command or process substitution
// (also one in a redirection target), function body or `sh -c` string is
// one Command, after its wrappers are unwrapped.
type Command struct {
	// Text is the command as written, wrappers and leading assignments
	// included ("sudo -u ops timeout 5 git -C /r push").
	Text string
	// Words are the literal words of the innermost command after the
	// wrappers: the program first ("git", "-C", "/r", "push").
	Words []string
	// Wrappers are the wrappers unwrapped, outermost first ("sudo", "timeout").
	Wrappers []string
	// Norm is the normalized form the rules match: the program, its
	// global options stripped when its option table is known (git, docker,
	// kubectl, npm), then the subcommand and the rest ("git push").
	Norm string
	// Computed says why the program is not a literal word ("" when it
	// is): a variable, a command or process substitution, an ANSI-C
	// string, a brace expansion, a glob or a non-printing character.
	Computed string
	// Unmodelled names an option before the subcommand that the program's
	// option table does not know ("" when none).
	Unmodelled string
	// Privileged is set when a wrapper runs the command as another user
	// (sudo, doas): an allow rule must then match Text as well.
	Privileged bool
	// Dir is the folder the command runs in when a `cd` before it in the
	// same line changed it: absolute, "" for the start folder, or "?" when
	// it cannot be known.
	Dir string
}

// Program is the program name (Words[0]) or "".
func (c Command) Program() string {
	if len(c.Words) == 0 {
		return ""
	}
	return c.Words[0]
}

// PathWord is a word of a command line that may name a path or URL, with
// the folder it is relative to (Command.Dir's meaning).
type PathWord struct {
	Word string
	Dir  string
}

// Analysis is a shell command line taken apart.
type Analysis struct {
	Source   string
	Commands []Command
	// Paths are the words that may name paths or URLs: arguments, parts
	// of arguments split at '=', ':', ',' and quotes (--env-file=.env,
	// open('.env')), and redirection targets.
	Paths []PathWord
	// Writes say why the line writes files: a redirection that writes
	// (>, >>, >|, &>, &>>, <>), tee, a find action that deletes or
	// writes, and so on. Empty for a line that writes nothing the rules
	// can see.
	Writes []Write
	// Secrets say why the line prints secrets (env or printenv with no
	// arguments print every environment variable).
	Secrets []string
	// Hidden names the non-printing characters in the line ("U+200B").
	Hidden []string
	// Err is set when the line does not parse; Commands is then empty.
	Err error
}

// Write is one way a line writes a file.
type Write struct {
	Why    string // "the redirection > out.txt writes a file"
	Target string // the file, when it is a literal word ("" otherwise)
	Dir    string // the folder Target is relative to (Command.Dir's meaning)
}

// Analyze parses cmd as bash (mvdan.cc/sh/v3/syntax) and returns every
// simple command in it. home expands "~" and ws is the start folder of
// relative paths. It never runs anything: command and process
// substitutions are analysed, not expanded.
func Analyze(cmd, ws, home string) *Analysis {
	a := &Analysis{Source: cmd}
	for _, r := range cmd {
		if hidden(r) {
			if n := fmt.Sprintf("U+%04X", r); !contains(a.Hidden, n) {
				a.Hidden = append(a.Hidden, n)
			}
		}
	}
	w := &walker{a: a, home: home, ws: ws, vars: map[string]string{}}
	w.script(cmd, nil, 0)
	return a
}

// hidden reports a character a person cannot see in a command: control
// characters other than tab and newline, format characters (zero-width
// space and joiners, bidi controls) and spaces other than U+0020.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == ' ':
		return false
	case r == '\r' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		return true
	case unicode.IsSpace(r) || r == 0x3164 || r == 0x115F || r == 0x1160 || r == 0xFFA0:
		return true
	}
	return !unicode.IsPrint(r) && !unicode.IsGraphic(r)
}

// Escape returns s with every non-printing character written as \u{XXXX}
// (and a carriage return as \r), so that confirm text shows what really
// runs (BH-087).
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case hidden(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// maxVarLen bounds the value of a remembered assignment (x=$y$y$y… would
// grow without bound).
const maxVarLen = 4096

// maxDepth bounds nested `sh -c` / eval strings.
const maxDepth = 8

type walker struct {
	a    *Analysis
	home string
	ws   string
	dir  string            // "" start folder, "?" unknown, else absolute
	vars map[string]string // literal assignments seen so far (c=cu)
}

// script parses src and walks it; wrappers are the layers around it (for
// `sh -c` strings), depth counts nesting.
func (w *walker) script(src string, wrappers []string, depth int) {
	if depth > maxDepth {
		w.a.Commands = append(w.a.Commands, Command{Text: src, Computed: "shell strings nested more than 8 deep", Wrappers: wrappers})
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		if depth == 0 {
			w.a.Err = err
			return
		}
		w.a.Commands = append(w.a.Commands, Command{Text: src, Wrappers: wrappers,
			Computed: fmt.Sprintf("a nested shell string that does not parse (%v)", err)})
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			w.redirects(src, n.Redirs)
		case *syntax.CallExpr:
			w.call(src, n, wrappers, depth)
		case *syntax.DeclClause:
			words := []string{n.Variant.Value}
			for _, as := range n.Args {
				if as.Name != nil {
					words = append(words, as.Name.Value)
				}
				if as.Value != nil {
					w.pathWords(as.Value)
				}
			}
			w.add(Command{Text: slice(src, n), Words: words, Wrappers: wrappers, Norm: strings.Join(words, " ")})
		}
		return true
	})
}

func slice(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return src[s:e]
}

// redirects records what the redirections of one statement write and read.
func (w *walker) redirects(src string, rs []*syntax.Redirect) {
	for _, r := range rs {
		if r.Word == nil {
			continue
		}
		w.pathWords(r.Word)
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob,
			syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			target, ok := w.literal(r.Word)
			if ok && dynamic(r.Word, w.vars) != "" {
				ok = false
			}
			switch target {
			case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
				continue
			}
			shown := target
			if !ok {
				target, shown = "", slice(src, r.Word)
			}
			w.a.Writes = append(w.a.Writes, Write{Why: fmt.Sprintf("the redirection %s %s writes a file", r.Op, Escape(shown)), Target: target, Dir: w.dir})
		}
	}
}

func (w *walker) add(c Command) {
	c.Dir = w.dir
	w.a.Commands = append(w.a.Commands, c)
}

// word is one expanded word of a command and why it is computed at run
// time ("" when it is literal).
type word struct {
	s   string
	dyn string
}

func texts(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.s
	}
	return out
}

// call analyses one simple command: assignments, wrappers, the program.
func (w *walker) call(src string, ce *syntax.CallExpr, wrappers []string, depth int) {
	for _, as := range ce.Assigns {
		if as.Value != nil {
			w.pathWords(as.Value)
		}
	}
	if len(ce.Args) == 0 {
		// Assignments only: remember literal ones (c=cu) so that a later
		// ${c}rl is seen for what it is.
		for _, as := range ce.Assigns {
			if as.Name == nil {
				continue
			}
			if v, ok := w.literal(as.Value); ok && as.Value != nil && !as.Append && dynamic(as.Value, nil) == "" && len(v) <= maxVarLen {
				w.vars[as.Name.Value] = v
			} else {
				delete(w.vars, as.Name.Value)
			}
		}
		return
	}
	c := Command{Text: slice(src, ce), Wrappers: append([]string(nil), wrappers...)}
	var words []word
	for i, wd := range ce.Args {
		fields, why := w.fields(wd)
		for _, f := range fields {
			words = append(words, word{s: f, dyn: why})
		}
		if i > 0 {
			w.pathWords(wd)
		}
	}
	w.unwrap(c, words, depth)
}

func nonPrinting(s string) string {
	for _, r := range s {
		if hidden(r) {
			return fmt.Sprintf("U+%04X", r)
		}
	}
	return ""
}

// fields expands one word the way the shell would, without running
// anything: braces, quotes, escapes, ANSI-C strings, ~, and $name for
// names assigned a literal earlier in the line (expand.Fields, with no
// globbing). why is non-empty when the result depends on run time (the
// fields are then a best guess: the literal parts).
func (w *walker) fields(wd *syntax.Word) (fields []string, why string) {
	if c := cloneWord(wd); syntax.SplitBraces(c) {
		why = "brace expansion"
		if braceCount(c.Parts) > maxBraceFields {
			return []string{litParts(wd)}, "a brace expansion of more than 256 words"
		}
	}
	if d := dynamic(wd, w.vars); d != "" {
		why = d
	}
	fields, ok := w.expand(wd)
	if !ok || len(fields) == 0 {
		fields = []string{litParts(wd)}
	}
	if why == "" && hasUnquotedGlob(wd) {
		why = "a glob pattern"
	}
	return fields, why
}

// maxBraceFields bounds the words one brace expansion may give before it
// is judged without expanding ({1..99999999} would take the plane's
// memory).
const maxBraceFields = 256

// braceCount is how many words the brace expansions in parts give, capped
// just above maxBraceFields.
func braceCount(parts []syntax.WordPart) int {
	n := 1
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if b.Sequence {
			k = maxBraceFields + 1
			if len(b.Elems) >= 2 {
				lo, hi := b.Elems[0].Lit(), b.Elems[1].Lit()
				if x, err := strconv.Atoi(lo); err == nil {
					if y, err := strconv.Atoi(hi); err == nil {
						k = min(abs(y-x)+1, maxBraceFields+1)
					}
				} else if len(lo) == 1 && len(hi) == 1 {
					k = abs(int(hi[0])-int(lo[0])) + 1
				}
			}
		} else {
			for _, e := range b.Elems {
				k += braceCount(e.Parts)
			}
		}
		n *= max(k, 1)
		if n > maxBraceFields {
			return maxBraceFields + 1
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func cloneWord(wd *syntax.Word) *syntax.Word {
	c := *wd
	c.Parts = append([]syntax.WordPart(nil), wd.Parts...)
	return &c
}

// dynamic says which part of wd is computed at run time ("" for none).
func dynamic(wd *syntax.Word, vars map[string]string) string {
	why := ""
	syntax.Walk(wd, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Param != nil && simpleParam(n) {
				if _, ok := vars[n.Param.Value]; ok {
					why = "a variable ($" + n.Param.Value + ")"
					return false
				}
			}
			why = "a variable"
		case *syntax.CmdSubst:
			why = "a command substitution"
		case *syntax.ProcSubst:
			why = "a process substitution"
		case *syntax.ArithmExp:
			why = "an arithmetic expansion"
		case *syntax.ExtGlob:
			why = "an extended glob"
		case *syntax.SglQuoted:
			if n.Dollar {
				why = "an ANSI-C quoted string"
			}
		}
		return true
	})
	return why
}

func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && !p.Excl && !p.Length && !p.Width && p.Index == nil && p.Slice == nil &&
		p.Repl == nil && p.Exp == nil && p.Names == 0 && len(p.Modifiers) == 0 && p.NestedParam == nil
}

func hasUnquotedGlob(wd *syntax.Word) bool {
	for _, p := range wd.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "*?[") {
			return true
		}
	}
	return false
}

// literal expands wd into one string without running anything; ok is
// false when it holds a command or process substitution or another part
// that needs a run.
func (w *walker) literal(wd *syntax.Word) (string, bool) {
	if wd == nil {
		return "", true
	}
	f, ok := w.expand(wd)
	return strings.Join(f, " "), ok
}

// expand is expand.Fields over the literal assignments seen so far, with
// command and process substitutions refused and no globbing.
func (w *walker) expand(wd *syntax.Word) (f []string, ok bool) {
	defer func() {
		if recover() != nil { // the expander must never take the plane down
			f, ok = nil, false
		}
	}()
	cfg := &expand.Config{Env: w.env(),
		CmdSubst:  func(io.Writer, *syntax.CmdSubst) error { return errRuns },
		ProcSubst: func(*syntax.ProcSubst) (string, error) { return "", errRuns }}
	f, err := expand.Fields(cfg, wd)
	if err != nil {
		return nil, false
	}
	return f, true
}

// errRuns stops an expansion that would have to run a command.
var errRuns = errors.New("the word needs a command to run")

func (w *walker) env() expand.Environ {
	pairs := []string{"HOME=" + w.home}
	for k, v := range w.vars {
		pairs = append(pairs, k+"="+v)
	}
	return expand.ListEnviron(pairs...)
}

// litParts is the literal text of wd with every computed part dropped.
func litParts(wd *syntax.Word) string {
	var b strings.Builder
	var walk func(parts []syntax.WordPart)
	walk = func(parts []syntax.WordPart) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				walk(p.Parts)
			}
		}
	}
	walk(wd.Parts)
	return b.String()
}

// pathWords records the words of wd that may name paths: the expanded
// word and its parts split at separators.
func (w *walker) pathWords(wd *syntax.Word) {
	fields, _ := w.fields(wd)
	for _, f := range fields {
		w.pathWord(f)
	}
}

func (w *walker) pathWord(f string) {
	if f == "" {
		return
	}
	add := func(s string) {
		for _, pw := range w.a.Paths {
			if pw.Word == s && pw.Dir == w.dir {
				return
			}
		}
		w.a.Paths = append(w.a.Paths, PathWord{Word: s, Dir: w.dir})
	}
	add(f)
	for _, part := range strings.FieldsFunc(f, func(r rune) bool {
		switch r {
		case '=', ':', ',', '"', '\'', '(', ')', ';', '|', '&', '<', '>', '`', '$', '{', '}', ' ', '\t', '\n', '+':
			return true
		}
		return false
	}) {
		if part != f {
			add(part)
		}
	}
}

// unwrap peels wrappers off words (env, nohup, timeout, command, exec,
// nice, time, xargs, sudo, doas, stdbuf, setsid, ionice, builtin; sh -c,
// bash -c, zsh -c and eval strings are parsed as scripts of their own) and
// adds the innermost command.
func (w *walker) unwrap(c Command, words []word, depth int) {
	for len(words) > 0 {
		if why := words[0].dyn; why != "" {
			c.Computed = fmt.Sprintf("program name computed at run time (%s in %q)", why, Escape(words[0].s))
			break
		}
		if n := nonPrinting(words[0].s); n != "" {
			c.Computed = fmt.Sprintf("program name computed at run time (it holds the non-printing character %s)", n)
			break
		}
		prog := path.Base(words[0].s)
		if isShell(prog) {
			i, mode := shellString(texts(words[1:]))
			switch mode {
			case "stdin":
				c.Computed = "program name computed at run time (" + prog + " runs the commands it reads from its input)"
			case "c":
				script := words[1+i]
				if script.dyn != "" {
					c.Computed = fmt.Sprintf("program name computed at run time (the %s -c string holds %s)", prog, script.dyn)
					break
				}
				w.script(script.s, append(c.Wrappers, prog+" -c"), depth+1)
				return
			}
			break // a script file: the shell itself is the program
		}
		if prog == "eval" {
			if len(words) == 1 {
				return
			}
			for _, a := range words[1:] {
				if a.dyn != "" {
					c.Computed = "program name computed at run time (eval of " + a.dyn + ")"
					break
				}
			}
			if c.Computed != "" {
				break
			}
			w.script(strings.Join(texts(words[1:]), " "), append(c.Wrappers, "eval"), depth+1)
			return
		}
		wr, ok := wrappers[prog]
		if !ok {
			break
		}
		st := wr.strip(texts(words[1:]))
		if st.at < 0 && wr.defaultCmd != "" && st.script == "" {
			c.Wrappers = append(c.Wrappers, prog)
			words = []word{{s: wr.defaultCmd}}
			continue
		}
		if st.secret != "" {
			w.a.Secrets = append(w.a.Secrets, st.secret)
		}
		if st.script != "" {
			w.script(st.script, append(c.Wrappers, prog), depth+1)
			return
		}
		if st.at < 0 {
			break // the wrapper runs nothing (command -v, env alone): it is the program
		}
		c.Wrappers = append(c.Wrappers, prog)
		if wr.privileged {
			c.Privileged = true
		}
		words = words[1+st.at:]
	}
	if len(words) == 0 {
		return
	}
	c.Words = texts(words)
	c.Norm, c.Unmodelled = normalize(c.Words)
	if c.Computed == "" && path.Base(c.Words[0]) == "cd" {
		w.cd(c.Words)
	}
	w.add(c)
}

// cd follows a literal `cd DIR` for the commands after it.
func (w *walker) cd(words []string) {
	if len(words) < 2 {
		w.dir = w.home
		return
	}
	d := words[len(words)-1]
	switch {
	case w.dir == "?" || d == "-" || d == "":
		w.dir = "?"
	case path.IsAbs(d):
		w.dir = path.Clean(d)
	default:
		base := w.dir
		if base == "" {
			base = w.ws
		}
		w.dir = path.Join(base, d)
	}
}

func isShell(p string) bool {
	switch p {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh", "fish":
		return true
	}
	return false
}

// shellString finds how a shell's arguments give it commands: "c" with
// the index of the -c string, "file" for a script file, "stdin" for
// commands read from its input.
func shellString(args []string) (int, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return 0, "file"
			}
			return 0, "stdin"
		}
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return 0, "file"
		}
		if a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file" {
			i++
			continue
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			if i+1 >= len(args) {
				return 0, "stdin"
			}
			return i + 1, "c"
		}
	}
	return 0, "stdin"
}
