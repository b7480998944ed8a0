package confine

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Error texts by which a command reports what the confinement refused
// (strerror of EROFS, EACCES, EPERM; resolver and connection failures).
var (
	writeDenied = []string{"Read-only file system", "read-only file system", "EROFS", "cross-device link"}
	readDenied  = []string{"Permission denied", "permission denied", "EACCES"}
	opDenied    = []string{"Operation not permitted", "operation not permitted", "EPERM"}
	netDenied   = []string{"Network is unreachable", "network is unreachable", "Could not resolve host", "Temporary failure in name resolution",
		"Name or service not known", "nodename nor servname", "no such host", "Connection refused", "connection refused", "getaddrinfo", "denied by egress policy",
		"Failed to connect", "Couldn't connect", "Could not connect"}
	seccompOps = []string{"ptrace", "mount", "unshare", "setns", "keyctl", "bpf", "perf_event_open", "chroot", "attach"}
)

// Explain reads a confined command's error output and returns the
// denials it shows, in order, each one sentence naming what was refused,
// the rule and its setting (for example "write outside the workspace
// denied by confinement (workspace-write): /etc/x (setting
// sandbox.confinement)"); at most max (0: 5). A line is taken as a denial
// only when a path it names falls under one of the policy's rules, or its
// error is one only the confinement causes here (a network failure with
// the network off or limited; an operation seccomp refuses).
func (p *Policy) Explain(text string, max int) []string {
	if max <= 0 {
		max = 5
	}
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(out) < max {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if len(out) >= max {
			break
		}
		w, r, o := containsAny(line, writeDenied), containsAny(line, readDenied), containsAny(line, opDenied)
		if w || r || o {
			found := false
			for _, c := range append(errorSubject(line), pathCandidates(line)...) {
				if d := p.classify(c, w, r); d != "" {
					add(d)
					found = true
					break
				}
			}
			if !found && o {
				for _, op := range seccompOps {
					if strings.Contains(line, op) {
						add(fmt.Sprintf("%s denied by confinement (%s): the seccomp filter refuses it (setting sandbox.confinement)", op, p.Mode))
						found = true
						break
					}
				}
			}
			if found {
				continue
			}
		}
		if containsAny(line, netDenied) {
			switch p.Network {
			case NetworkOff:
				add("network access denied by confinement: the network is off, loopback only (setting sandbox.network)")
			case NetworkLimited:
				add("network access outside the egress proxy denied by confinement: only " + strings.Join(p.AllowedDomains, ", ") +
					" are reachable, through $HTTPS_PROXY (settings sandbox.network, sandbox.allowedDomains)")
			}
		}
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// classify says which rule denied an access to c (a path as the command
// printed it), or "" when none covers it.
func (p *Policy) classify(c string, write, read bool) string {
	abs := c
	switch {
	case strings.HasPrefix(c, "~/") && p.Home != "":
		abs = filepath.Join(p.Home, c[2:])
	case !filepath.IsAbs(c):
		if p.Workspace == "" {
			return ""
		}
		abs = filepath.Join(p.Workspace, c)
	}
	abs = filepath.Clean(abs)
	for _, d := range p.DenyRead {
		if abs == d || isUnder(abs, d) {
			return fmt.Sprintf("read of %s denied by confinement: %s is unreadable (setting sandbox.denyRead)", c, p.Display(d))
		}
	}
	inWS := p.Workspace != "" && (abs == p.Workspace || isUnder(abs, p.Workspace))
	if inWS {
		rel, _ := filepath.Rel(p.Workspace, abs)
		rel = filepath.ToSlash(rel)
		parts := strings.Split(rel, "/")
		for i := range parts {
			sub := strings.Join(parts[:i+1], "/")
			if matchDenied(p.DenyPatterns, sub, parts[i]) {
				return fmt.Sprintf("read of %s denied by confinement: the workspace's denied files are unreadable (setting approval.deniedPaths)", rel)
			}
		}
		if !write && !read {
			return ""
		}
		if p.Mode == ReadOnly {
			return fmt.Sprintf("write in the workspace denied by confinement (read-only): %s (setting sandbox.confinement)", rel)
		}
		for _, ro := range p.ReadOnlyPaths {
			if rel == ro || strings.HasPrefix(rel, ro+"/") {
				return fmt.Sprintf("write to %s denied by confinement: %s is read-only inside the workspace (setting sandbox.readOnlyPaths)", rel, ro)
			}
		}
		return ""
	}
	if !write {
		return ""
	}
	for _, w := range p.WritablePaths {
		if abs == w || isUnder(abs, w) {
			return ""
		}
	}
	return fmt.Sprintf("write outside the workspace denied by confinement (%s): %s (setting sandbox.confinement; sandbox.writablePaths adds folders)", p.Mode, abs)
}

func isUnder(p, root string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != "." && filepath.IsLocal(r)
}

// errorSubject returns the path an error line is about when it has the
// usual "prog: PATH: strerror" (or "cannot create PATH: strerror") shape.
func errorSubject(line string) []string {
	idx := -1
	for _, group := range [][]string{writeDenied, readDenied, opDenied} {
		for _, m := range group {
			if i := strings.Index(line, m); i >= 0 && (idx < 0 || i < idx) {
				idx = i
			}
		}
	}
	if idx <= 0 {
		return nil
	}
	pre := strings.TrimRight(line[:idx], ": ")
	if i := strings.LastIndex(pre, ": "); i >= 0 {
		pre = pre[i+2:]
	}
	for _, verb := range []string{"cannot create ", "cannot touch ", "cannot remove ", "cannot open ", "cannot access ", "cannot stat ",
		"cannot create directory ", "cannot create regular file ", "cannot move ", "failed to create symbolic link ", "failed to create hard link "} {
		if i := strings.LastIndex(pre, verb); i >= 0 {
			pre = pre[i+len(verb):]
		}
	}
	pre = strings.Trim(pre, "'\"‘’` ")
	if pre == "" || strings.ContainsAny(pre, " \t") {
		return nil
	}
	return []string{pre}
}

// pathCandidates returns the words of line that may be paths: quoted
// names first, then words holding a slash or a dot, trimmed of
// punctuation.
func pathCandidates(line string) []string {
	var out []string
	for _, q := range []string{"'", "\"", "‘", "’", "`"} {
		rest := line
		for {
			i := strings.Index(rest, q)
			if i < 0 {
				break
			}
			rest = rest[i+len(q):]
			end := q
			if q == "‘" {
				end = "’"
			}
			j := strings.Index(rest, end)
			if j < 0 {
				break
			}
			if w := rest[:j]; w != "" && !strings.ContainsAny(w, " \t") {
				out = append(out, w)
			}
			rest = rest[j+len(end):]
		}
	}
	for _, f := range strings.FieldsFunc(line, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\'' || r == '"' || r == '`' || r == '(' || r == ')' || r == ','
	}) {
		f = strings.TrimRight(strings.TrimPrefix(f, "'"), ":;,.")
		if f == "" || strings.HasPrefix(f, "-") {
			continue
		}
		if strings.Contains(f, "/") || strings.HasPrefix(f, ".") {
			out = append(out, f)
		}
	}
	return out
}
