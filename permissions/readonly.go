package permissions

import (
	"path"
	"strings"
)

// This file is the default read-only auto-approve list (BH-086): the
// commands that run without a rule in the "default" mode, because they
// only read. It is data: one entry per program, with the options and
// forms that make it write or run something else. A command is
// auto-approved only when every command of the line is read-only, nothing
// is written (no redirection that writes, no tee), no secret is printed
// (env or printenv with no arguments), and every path it names is inside
// the workspace (or an additional directory) and no credential path.

// readOnlyEntry says when a program only reads.
type readOnlyEntry struct {
	// writes are options (exact, or a prefix ending in '*') that make it
	// write, delete or run another command.
	writes []string
	// subcommands, when set, are the only read-only first arguments
	// (git status, git log, ...).
	subcommands []string
	// secretAlone: with no arguments it prints secrets.
	secretAlone bool
}

// ReadOnlyPrograms is the default auto-approve list.
var ReadOnlyPrograms = map[string]readOnlyEntry{
	"ls":       {},
	"cat":      {},
	"head":     {},
	"tail":     {writes: []string{"-f", "--follow*", "-F"}},
	"wc":       {},
	"grep":     {},
	"egrep":    {},
	"fgrep":    {},
	"rg":       {writes: []string{"--pre*"}},
	"echo":     {},
	"printf":   {writes: []string{"-v"}},
	"pwd":      {},
	"cd":       {},
	"true":     {},
	"false":    {},
	"env":      {secretAlone: true}, // with a command, env is a wrapper and never reaches this table
	"printenv": {secretAlone: true},
	"find":     {writes: []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}},
	"diff":     {writes: []string{"--output*"}},
	"stat":     {},
	"du":       {},
	"df":       {},
	"file":     {writes: []string{"-C", "--compile"}},
	"which":    {},
	"type":     {},
	"basename": {},
	"dirname":  {},
	"realpath": {},
	"readlink": {},
	"tree":     {writes: []string{"-o"}},
	"sort":     {writes: []string{"-o", "--output*", "-T", "--temporary-directory*", "--compress-program*"}},
	"uniq":     {}, // a second file argument is an output: see readOnly
	"date":     {writes: []string{"-s", "--set*"}},
	"uname":    {},
	"whoami":   {},
	"id":       {},
	"test":     {},
	"[":        {},
	"git": {subcommands: []string{"status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe",
		"shortlog", "grep"}, writes: []string{"--output*", "-O*", "--open-files-in-pager*", "--ext-diff", "--textconv"}},
}

// readOnly reports whether one command only reads, and if not, why.
func readOnly(c Command) (bool, string) {
	if c.Computed != "" {
		return false, c.Computed
	}
	if len(c.Wrappers) > 0 {
		for _, w := range c.Wrappers {
			if w == "sudo" || w == "doas" || w == "xargs" {
				return false, "it runs through " + w
			}
		}
	}
	if len(c.Words) == 0 {
		return true, ""
	}
	prog := c.Words[0]
	e, ok := ReadOnlyPrograms[prog]
	if !ok {
		return false, "`" + path.Base(prog) + "` is not on the read-only list"
	}
	args := c.Words[1:]
	if e.secretAlone && len(args) == 0 {
		return false, "`" + prog + "` with no arguments prints every environment variable, secrets included"
	}
	if e.subcommands != nil {
		norm := strings.Fields(c.Norm)
		if len(norm) < 2 || !contains(e.subcommands, norm[1]) {
			return false, "`" + c.Norm + "` is not a read-only " + prog + " subcommand"
		}
		if c.Unmodelled != "" {
			return false, "option " + c.Unmodelled + " before the subcommand is not in " + prog + "'s option table"
		}
	}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		for _, wo := range e.writes {
			if p, ok := strings.CutSuffix(wo, "*"); ok {
				if strings.HasPrefix(a, p) {
					return false, "`" + prog + " " + a + "` writes or runs another command"
				}
			} else if name == wo {
				return false, "`" + prog + " " + a + "` writes or runs another command"
			}
		}
	}
	if prog == "uniq" {
		n := 0
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				n++
			}
		}
		if n > 1 {
			return false, "`uniq` with two file arguments writes the second"
		}
	}
	return true, ""
}
