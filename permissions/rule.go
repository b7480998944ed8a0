package permissions

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// List is the settings list a rule comes from.
type List string

// The three lists of a permissions block.
const (
	ListAllow List = "allow"
	ListAsk   List = "ask"
	ListDeny  List = "deny"
)

// Kinds of access (tool.Access.Kind) that rules name.
const (
	KindBash     = "Bash"
	KindRead     = "Read"
	KindEdit     = "Edit"
	KindWebFetch = "WebFetch"
)

// Rule is one compiled permission rule.
type Rule struct {
	List List
	// Source is where the rule was written: "permissions.deny[0]",
	// "approval.confirmCommands[2]", "approval.deniedPaths[1]",
	// "approval.confirmTools[0]", "approval.confirmDestructiveMCP",
	// "built-in credential paths".
	Source string
	// Text is the rule as written: `Bash(git push:*)`, `Read(./.env)`.
	Text string

	tool    string // the tool part: Bash, Read, Edit, WebFetch, mcp__s__t, a wire name
	spec    string // the specifier inside the parentheses
	hasSpec bool

	bash   bashPattern
	path   PathPattern
	pathOK bool
	domain string
	re     *regexp.Regexp // approval.confirmCommands
	hint   string         // "destructive" or "unannotated" (MCP annotation rules)
	// builtin rules (credential paths) are skipped in bypassPermissions.
	builtin bool
}

// String names the rule for messages: `permissions.deny[0] "Bash(curl:*)"`.
func (r *Rule) String() string { return r.Source + " " + strconv.Quote(r.Text) }

// kindOf is the access kind a Claude Code tool name stands for ("" for a
// tool name of another kind).
func kindOf(tool string) string {
	switch tool {
	case "Bash":
		return KindBash
	case "Read":
		return KindRead
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return KindEdit
	case "WebFetch":
		return KindWebFetch
	}
	return ""
}

// aliases map Claude Code's other built-in tool names onto ours.
var aliases = map[string]string{"Glob": "glob", "Grep": "grep", "LS": "ls"}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_*.-]+$`)

// parseRule compiles one rule string of a permissions list.
func parseRule(list List, source, text string, pc pathContext) (*Rule, error) {
	s := strings.TrimSpace(text)
	r := &Rule{List: list, Source: source, Text: s}
	name := s
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return nil, fmt.Errorf("%s %q: a specifier opened with '(' must end with ')'", source, text)
		}
		name, r.spec, r.hasSpec = s[:i], s[i+1:len(s)-1], true
		if strings.TrimSpace(r.spec) == "" || r.spec == "*" {
			r.hasSpec = false // Bash() and Bash(*) are the same as Bash
		}
	}
	if !toolNameRE.MatchString(name) {
		return nil, fmt.Errorf("%s %q: %q is not a tool name (want Bash, Read, Edit, WebFetch, mcp__server__tool or a tool's name)", source, text, name)
	}
	if a, ok := aliases[name]; ok {
		name = a
	}
	r.tool = name
	if !r.hasSpec {
		return r, nil
	}
	switch kindOf(name) {
	case KindBash:
		r.bash = newBashPattern(r.spec)
	case KindRead, KindEdit:
		p, err := newPattern(r.spec, pc)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %v", source, text, err)
		}
		r.path, r.pathOK = p, true
	case KindWebFetch:
		d, ok := strings.CutPrefix(r.spec, "domain:")
		if !ok || d == "" {
			return nil, fmt.Errorf("%s %q: WebFetch takes domain:HOST (WebFetch(domain:example.com))", source, text)
		}
		r.domain = strings.ToLower(d)
		if h, _, err := net.SplitHostPort(r.domain); err == nil {
			r.domain = h // a port is not part of the domain
		}
	default:
		if strings.HasPrefix(name, "mcp__") {
			return nil, fmt.Errorf("%s %q: an MCP tool rule takes no specifier (write mcp__server__tool)", source, text)
		}
		// A tool of ours with a specifier: read as the grammar of the
		// tool's access kind when the call is matched.
		r.bash = newBashPattern(r.spec)
		if p, err := newPattern(r.spec, pc); err == nil {
			r.path, r.pathOK = p, true
		}
		if d, ok := strings.CutPrefix(r.spec, "domain:"); ok {
			r.domain = strings.ToLower(d)
		}
	}
	return r, nil
}

// bashPattern is the specifier of a Bash rule, in Claude Code's forms:
// "npm run build" (exactly that command), "npm run test:*" (that prefix at
// a word boundary: "npm run test" or "npm run test --watch", never
// "npm run tests"), and wildcards "git * main", "git push *" (a "*"
// matches any characters, spaces included; a single trailing " *" also
// matches nothing, so "git push *" matches "git push" too, but not
// "git pushx").
type bashPattern struct {
	exact  string
	prefix string
	re     *regexp.Regexp
}

func newBashPattern(spec string) bashPattern {
	switch {
	case strings.HasSuffix(spec, ":*") && !strings.Contains(strings.TrimSuffix(spec, ":*"), "*"):
		return bashPattern{prefix: strings.TrimSuffix(spec, ":*")}
	case strings.HasSuffix(spec, " *") && strings.Count(spec, "*") == 1:
		return bashPattern{prefix: strings.TrimSuffix(spec, " *")}
	case strings.Contains(spec, "*"):
		parts := strings.Split(spec, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		return bashPattern{re: regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)}
	}
	return bashPattern{exact: spec}
}

func (b bashPattern) match(cmd string) bool {
	switch {
	case b.re != nil:
		return b.re.MatchString(cmd)
	case b.prefix != "":
		return cmd == b.prefix || strings.HasPrefix(cmd, b.prefix+" ")
	}
	return cmd == b.exact
}

// hostOf returns the lower-case host of a URL ("" when s is none).
func hostOf(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// matchDomain reports whether host is domain, or below it for "*.domain".
func matchDomain(domain, host string) bool {
	if host == "" {
		return false
	}
	if d, ok := strings.CutPrefix(domain, "*."); ok {
		return host == d || strings.HasSuffix(host, "."+d)
	}
	return host == domain
}
