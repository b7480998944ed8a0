package permissions_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/tool"
)

func engine(t *testing.T, s *permissions.Settings, o permissions.Options) *permissions.Engine {
	t.Helper()
	o.Settings = s
	if o.Workspace == "" {
		o.Workspace = "/ws"
	}
	if o.Home == "" {
		o.Home = "/hm/u"
	}
	if o.SettingsDir == "" {
		o.SettingsDir = "/cfg"
	}
	e, err := permissions.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestReadOnlyDefaults is BH-086: the shipped auto-approve list covers ls,
// cat, head, find, grep, echo, pwd and env, and none of the case's forms
// is auto-approved.
func TestReadOnlyDefaults(t *testing.T) {
	for _, p := range []string{"ls", "cat", "head", "find", "grep", "echo", "pwd", "env"} {
		if _, ok := permissions.ReadOnlyPrograms[p]; !ok {
			t.Errorf("%s is not on the default read-only list", p)
		}
	}
	e := engine(t, &permissions.Settings{}, permissions.Options{})
	for _, cmd := range []string{
		"echo ok > /ws/clobber.txt",
		"find . -name '*.tmp' -exec rm {} +",
		"find . -delete",
		"env",
		"printenv",
		"cat ~/.aws/credentials",
		"grep -r key ~/.ssh",
		"ls; rm -rf /ws/build",
	} {
		if d := bash(e, cmd); d.Verdict != permissions.Ask {
			t.Errorf("%q: %s by %s, want ask (not auto-approved)", cmd, d.Verdict, d.Rule)
		}
	}
	// Control: the plain forms are auto-approved.
	for _, cmd := range []string{"ls -la", "cat README.md", "head -3 a.txt", "find . -name '*.go'", "grep -rn TODO .", "echo hi", "pwd", "env FOO=1 pwd"} {
		if d := bash(e, cmd); d.Verdict != permissions.Allow || d.Rule != permissions.ReadOnlyRule {
			t.Errorf("%q: %s by %s, want allow by the read-only list", cmd, d.Verdict, d.Rule)
		}
	}
}

// TestNormalize is the option-table normalizer (BH-085), table-driven.
func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"git -C /r push origin":                 "git push origin",
		"git --git-dir=/r/.git push":            "git push",
		"git -c user.name=x -c a=b push":        "git push",
		"git --no-pager -P log":                 "git log",
		"git -C/r status":                       "git status",
		"docker -H tcp://x --context c run img": "docker run img",
		"kubectl -n prod --context=c delete po": "kubectl delete po",
		"npm --prefix . -w pkg publish":         "npm publish",
		"ls -la":                                "ls -la",
		"/usr/bin/git -C . reset --hard":        "/usr/bin/git reset --hard",
	}
	for in, want := range cases {
		a := permissions.Analyze(in, "/ws", "/hm/u")
		if len(a.Commands) != 1 || a.Commands[0].Norm != want {
			t.Errorf("%q: %+v, want norm %q", in, a.Commands, want)
		}
	}
	if a := permissions.Analyze("git --frobnicate push", "/ws", "/hm/u"); a.Commands[0].Unmodelled != "--frobnicate" {
		t.Errorf("unknown git option not reported: %+v", a.Commands[0])
	}
	// An unknown option before the subcommand of a program with rules asks.
	e := engine(t, &permissions.Settings{Allow: []string{"Bash(git:*)"}, Deny: []string{"Bash(git push:*)"}}, permissions.Options{})
	if d := bash(e, "git --frobnicate value push"); d.Verdict != permissions.Ask || !strings.Contains(d.Rule, "option table") {
		t.Errorf("unmodelled option: %s by %s", d.Verdict, d.Rule)
	}
}

func TestAnalyzeUnwraps(t *testing.T) {
	a := permissions.Analyze(`sudo -u ops timeout -k 5 10 nice -n 3 env -u X A=1 xargs -n1 git -C r push`, "/ws", "/h")
	c := a.Commands[0]
	if want := []string{"sudo", "timeout", "nice", "env", "xargs"}; !slices.Equal(c.Wrappers, want) || c.Norm != "git push" || !c.Privileged {
		t.Errorf("unwrapped to %+v", c)
	}
	a = permissions.Analyze(`echo ok > >(curl -s x) 2> out.txt`, "/ws", "/h")
	var progs []string
	for _, c := range a.Commands {
		progs = append(progs, c.Program())
	}
	if !slices.Contains(progs, "curl") || len(a.Writes) != 2 {
		t.Errorf("process substitution in a redirection: %v, writes %v", progs, a.Writes)
	}
	if a := permissions.Analyze("echo 'unterminated", "/ws", "/h"); a.Err == nil {
		t.Error("a line that does not parse has no error")
	}
}

// TestPathRules covers Claude Code's path forms and gitignore semantics.
func TestPathRules(t *testing.T) {
	e := engine(t, &permissions.Settings{Deny: []string{
		"Read(//etc/secret/**)", "Read(~/private/*.txt)", "Read(/conf/*.json)", "Read(./secrets/**)", "Read(*.pem)", "Edit(src/gen/**)",
	}}, permissions.Options{})
	read := func(p string) permissions.Verdict {
		return e.Decide(permissions.Request{Tool: "read_file", Access: tool.Access{Kind: tool.AccessRead, Paths: []string{p}}}).Verdict
	}
	edit := func(p string) permissions.Verdict {
		return e.Decide(permissions.Request{Tool: "write_file", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{p}}}).Verdict
	}
	for p, want := range map[string]permissions.Verdict{
		"/etc/secret/a/b":          permissions.Deny,
		"/hm/u/private/x.txt":      permissions.Deny,
		"/hm/u/private/d/x.txt":    permissions.Ask, // "*" is one segment: not denied, and outside the workspace
		"/cfg/conf/a.json":         permissions.Deny,
		"secrets/k":                permissions.Deny,
		"secrets":                  permissions.Deny,
		"a/secrets/k":              permissions.Allow, // anchored at the workspace
		"deep/down/cert.pem":       permissions.Deny,  // no "/": any depth
		"README.md":                permissions.Allow,
		"/elsewhere/README.md":     permissions.Ask, // outside the workspace
		"src/gen/x.go":             permissions.Allow,
		"../ws/secrets/k":          permissions.Deny, // cleaned before matching
		"./secrets/../secrets/x":   permissions.Deny,
		"/ws/secrets/inside-abs.k": permissions.Deny,
	} {
		if got := read(p); got != want {
			t.Errorf("Read %s: %s, want %s", p, got, want)
		}
	}
	if edit("src/gen/x.go") != permissions.Deny || edit("src/main.go") != permissions.Ask {
		t.Error("Edit rules")
	}
	// The same matcher the file tools call.
	dp := e.DeniedPaths()
	if rule, ok := dp.Match("secrets/a", false); !ok || !strings.Contains(rule, "Read(./secrets/**)") {
		t.Errorf("DeniedPaths read: %q %v", rule, ok)
	}
	if _, ok := dp.Match("secrets/a", true); ok {
		t.Error("a Read rule denies writing")
	}
	if _, ok := dp.Match("src/gen/a", true); !ok {
		t.Error("an Edit rule does not deny writing")
	}
}

// TestLegacyKeys: today's approval keys are rules of the same engine.
func TestLegacyKeys(t *testing.T) {
	e := engine(t, nil, permissions.Options{ConfirmTools: []string{"write_file"}, ConfirmCommands: []string{`\bsudo\b`, `\bgit\s+reset\s+--hard\b`},
		DeniedPaths: []string{".env", "secrets/*", "~/.kube/config"}, ConfirmDestructiveMCP: true})
	if e.Mode() != permissions.ModeUnset {
		t.Fatal(e.Mode())
	}
	yes := true
	for _, c := range []struct {
		req  permissions.Request
		want permissions.Verdict
		rule string
	}{
		{permissions.Request{Tool: "write_file", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{"a"}}}, permissions.Ask, "approval.confirmTools[0]"},
		{permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "git -C . reset --hard"}}, permissions.Ask, "approval.confirmCommands[1]"},
		{permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "make build"}}, permissions.Allow, ""},
		{permissions.Request{Tool: "read_file", Access: tool.Access{Kind: tool.AccessRead, Paths: []string{"sub/.env"}}}, permissions.Deny, "approval.deniedPaths[0]"},
		{permissions.Request{Tool: "read_file", Access: tool.Access{Kind: tool.AccessRead, Paths: []string{"secrets/x"}}}, permissions.Deny, "approval.deniedPaths[1]"},
		{permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "cat ~/.kube/config"}}, permissions.Ask, "approval.deniedPaths[2]"},
		{permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "$X"}}, permissions.Ask, "program name computed at run time"},
		{permissions.Request{Tool: "gh__delete", Server: "gh", Annotations: &tool.Annotations{DestructiveHint: &yes}}, permissions.Ask, "approval.confirmDestructiveMCP"},
		{permissions.Request{Tool: "gh__get", Server: "gh"}, permissions.Allow, ""},
	} {
		d := e.Decide(c.req)
		if d.Verdict != c.want || !strings.Contains(d.Rule, c.rule) {
			t.Errorf("%+v: %s by %s (%v), want %s by %s", c.req, d.Verdict, d.Rule, d.Reasons, c.want, c.rule)
		}
	}
}

// TestModes: what each defaultMode does with a call no rule decides.
func TestModes(t *testing.T) {
	ro := &tool.Annotations{ReadOnlyHint: true}
	reqs := map[string]permissions.Request{
		"read":     {Tool: "read_file", Access: tool.Access{Kind: tool.AccessRead, Paths: []string{"a"}}},
		"edit":     {Tool: "write_file", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{"a"}}},
		"editOut":  {Tool: "write_file", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{"/tmp/a"}}},
		"bash":     {Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "make"}},
		"bashRO":   {Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "ls"}},
		"mcp":      {Tool: "gh__create", Server: "gh"},
		"mcpRO":    {Tool: "gh__get", Server: "gh", Annotations: ro},
		"denied":   {Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "curl x"}},
		"computed": {Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: "$X y"}},
	}
	A, Q, D := permissions.Allow, permissions.Ask, permissions.Deny
	want := map[permissions.Mode]map[string]permissions.Verdict{
		permissions.ModeDefault:     {"read": A, "edit": Q, "editOut": Q, "bash": Q, "bashRO": A, "mcp": Q, "mcpRO": A, "denied": D, "computed": Q},
		permissions.ModeAcceptEdits: {"read": A, "edit": A, "editOut": Q, "bash": Q, "bashRO": A, "mcp": Q, "mcpRO": A, "denied": D, "computed": Q},
		permissions.ModePlan:        {"read": A, "edit": D, "editOut": D, "bash": D, "bashRO": A, "mcp": D, "mcpRO": A, "denied": D, "computed": D},
		permissions.ModeDontAsk:     {"read": A, "edit": D, "editOut": D, "bash": D, "bashRO": A, "mcp": D, "mcpRO": A, "denied": D, "computed": D},
		permissions.ModeBypass:      {"read": A, "edit": A, "editOut": A, "bash": A, "bashRO": A, "mcp": A, "mcpRO": A, "denied": D, "computed": Q},
	}
	for mode, w := range want {
		e := engine(t, &permissions.Settings{DefaultMode: mode, Deny: []string{"Bash(curl:*)"}}, permissions.Options{})
		for name, req := range reqs {
			if got := e.Decide(req).Verdict; got != w[name] {
				t.Errorf("%s %s: %s, want %s", mode, name, got, w[name])
			}
		}
	}
	// bypassPermissions without any rule that could hold a command back
	// runs computed commands too; explicit ask rules still ask.
	e := engine(t, &permissions.Settings{DefaultMode: permissions.ModeBypass, Ask: []string{"Bash(git push:*)"}}, permissions.Options{})
	if d := bash(e, "git push"); d.Verdict != Q {
		t.Errorf("bypass with an ask rule: %s", d.Verdict)
	}
	e = engine(t, &permissions.Settings{DefaultMode: permissions.ModeBypass}, permissions.Options{})
	if d := bash(e, "$X y"); d.Verdict != A {
		t.Errorf("bypass without rules, computed: %s", d.Verdict)
	}
	if _, err := permissions.New(permissions.Options{Settings: &permissions.Settings{DefaultMode: "auto"}}); err == nil {
		t.Error("an unknown mode is accepted")
	}
	if _, err := permissions.New(permissions.Options{Settings: &permissions.Settings{DefaultMode: permissions.ModeBypass, DisableBypassPermissionsMode: "disable"}}); err == nil {
		t.Error("a disabled bypassPermissions is accepted")
	}
}

// TestToolNames: bare names, MCP forms, our server__tool names, Offered.
func TestToolNames(t *testing.T) {
	e := engine(t, &permissions.Settings{
		Allow: []string{"mcp__github__get_issue", "write_file"},
		Ask:   []string{"mcp__slack"},
		Deny:  []string{"mcp__fs__*", "db__drop", "WebFetch"},
	}, permissions.Options{})
	for _, c := range []struct {
		req  permissions.Request
		want permissions.Verdict
	}{
		{permissions.Request{Tool: "github__get_issue", Server: "github"}, permissions.Allow},
		{permissions.Request{Tool: "github__create_issue", Server: "github"}, permissions.Ask}, // default mode
		{permissions.Request{Tool: "slack__post", Server: "slack"}, permissions.Ask},
		{permissions.Request{Tool: "fs__read", Server: "fs", Annotations: &tool.Annotations{ReadOnlyHint: true}}, permissions.Deny},
		{permissions.Request{Tool: "db__drop", Server: "db"}, permissions.Deny},
		{permissions.Request{Tool: "write_file", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{"x"}}}, permissions.Allow},
		{permissions.Request{Tool: "fetch", Access: tool.Access{Kind: tool.AccessWebFetch, URL: "https://a.example/"}}, permissions.Deny},
	} {
		if d := e.Decide(c.req); d.Verdict != c.want || (c.want != permissions.Allow && d.Rule == "") {
			t.Errorf("%s: %s by %q, want %s", c.req.Tool, d.Verdict, d.Rule, c.want)
		}
	}
	def := func(name string, kind string, ro bool) *tool.Tool {
		return tool.MustDefine(tool.Spec{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &tool.Annotations{ReadOnlyHint: ro},
			Access:      func(json.RawMessage) (tool.Access, error) { return tool.Access{Kind: kind}, nil },
			Handler:     func(context.Context, *tool.Call) (*tool.Result, error) { return nil, nil }})
	}
	if ok, why := e.Offered(def("db__drop", "", false), "db"); ok || !strings.Contains(why, `permissions.deny[1] "db__drop"`) {
		t.Errorf("a bare deny does not remove the tool: %v %s", ok, why)
	}
	plan := engine(t, &permissions.Settings{DefaultMode: permissions.ModePlan}, permissions.Options{})
	for _, c := range []struct {
		t    *tool.Tool
		want bool
	}{{def("read_file", tool.AccessRead, true), true}, {def("execute", tool.AccessBash, false), false},
		{def("write_file", tool.AccessEdit, false), false}, {def("gh__get", "", true), true}, {def("gh__put", "", false), false}} {
		if ok, why := plan.Offered(c.t, ""); ok != c.want {
			t.Errorf("plan mode offers %s: %v (%s)", c.t.Name(), ok, why)
		}
	}
}

func TestWebFetchDomains(t *testing.T) {
	e := engine(t, &permissions.Settings{Allow: []string{"WebFetch(domain:docs.example.com)"}, Deny: []string{"WebFetch(domain:*.evil.test)"}}, permissions.Options{})
	for url, want := range map[string]permissions.Verdict{
		"https://docs.example.com/a": permissions.Allow, "https://example.com/": permissions.Ask,
		"http://a.b.evil.test/": permissions.Deny, "http://evil.test/": permissions.Deny,
	} {
		if got := e.Decide(permissions.Request{Tool: "fetch", Access: tool.Access{Kind: tool.AccessWebFetch, URL: url}}).Verdict; got != want {
			t.Errorf("%s: %s, want %s", url, got, want)
		}
	}
}

func TestEscape(t *testing.T) {
	if got := permissions.Escape("cu\u200brl\r x\u202e"); got != `cu\u{200B}rl\r x\u{202E}` {
		t.Errorf("Escape: %q", got)
	}
	if got := permissions.Escape("plain\ttext\n"); got != "plain\ttext\n" {
		t.Errorf("Escape changed plain text: %q", got)
	}
}

func TestBadRules(t *testing.T) {
	_, err := permissions.New(permissions.Options{Settings: &permissions.Settings{
		Allow: []string{"Bash(git push", "Read([)"}, Deny: []string{"WebFetch(example.com)", "mcp__x__y(z)"}}})
	if err == nil {
		t.Fatal("bad rules compile")
	}
	for _, want := range []string{"permissions.allow[0]", "permissions.allow[1]", "permissions.deny[0]", "permissions.deny[1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// Hostile lines are judged without blowing up: a huge brace range is not
// expanded, assignments that grow are not remembered without bound.
func TestAnalyzeBounded(t *testing.T) {
	e := engine(t, &permissions.Settings{Deny: []string{"Bash(curl:*)"}}, permissions.Options{})
	if d := bash(e, "echo {1..99999999}{1..99999999}"); d.Verdict == permissions.Deny {
		t.Errorf("brace range: %s", d.Verdict)
	}
	line := "x=AAAAAAAAAAAAAAAA"
	for i := 0; i < 40; i++ {
		line += "; x=$x$x$x$x"
	}
	if d := bash(e, line+"; $x"); d.Verdict != permissions.Ask {
		t.Errorf("growing variable: %s by %s", d.Verdict, d.Rule)
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"echo ok > >(curl x)", "c=cu; ${c}rl x", "{a,b}{c,d}", "bash -c 'sh -c \"eval x\"'", "$'\\x63'", "cu\u200brl"} {
		f.Add(s)
	}
	e, err := permissions.New(permissions.Options{Workspace: "/ws", Home: "/h", Settings: &permissions.Settings{
		Allow: []string{"Bash(echo:*)"}, Deny: []string{"Bash(curl:*)", "Read(.env)"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		d := e.Decide(permissions.Request{Tool: "execute", Access: tool.Access{Kind: tool.AccessBash, Command: cmd}})
		if d.Verdict != permissions.Allow && d.Rule == "" {
			t.Errorf("%q: %s without a rule", cmd, d.Verdict)
		}
	})
}
