package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxmcp"
	"github.com/aibuddy/aibuddy/internal/fixtures/fxmrtr"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(fxEnv); args != "" {
		os.Exit(fxmcp.Main(strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	if kind := os.Getenv(serverEnv); kind != "" {
		runTestServer(kind)
		os.Exit(0)
	}
	if args := os.Getenv(fxmrtr.EnvArgs); args != "" { // fixture fx-mrtr (mrtr_test.go)
		os.Exit(fxmrtr.Main(context.Background(), strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// connect starts servers with short test timeouts and closes them at the
// end of the test.
func connect(t *testing.T, opts *mcpclient.Options, servers ...mcpclient.ServerConfig) *mcpclient.Manager {
	t.Helper()
	if opts == nil {
		opts = &mcpclient.Options{}
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 5 * time.Second
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = time.Second
	}
	m := mcpclient.Connect(context.Background(), servers, opts)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func status(t *testing.T, m *mcpclient.Manager, name string) mcpclient.ServerStatus {
	t.Helper()
	for _, s := range m.Servers() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q in %+v", name, m.Servers())
	return mcpclient.ServerStatus{}
}

func findTool(t *testing.T, m *mcpclient.Manager, server, name string) *tool.Tool {
	t.Helper()
	for _, tl := range m.Tools()[server] {
		if tl.Name() == name {
			return tl
		}
	}
	var names []string
	for _, tl := range m.Tools()[server] {
		names = append(names, tl.Name())
	}
	t.Fatalf("server %q has no tool %q; it has %v (status %+v)", server, name, names, status(t, m, server))
	return nil
}

func call(t *testing.T, tl *tool.Tool, input string) *tool.Result {
	t.Helper()
	return tl.Call(context.Background(), &tool.Call{ID: "c1", Name: tl.Name(), Input: json.RawMessage(input)})
}

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// BH-033, BH-037, BH-031 (intake side), BH-034 and the safe repairs: one
// server offers good, bad and repairable schemas; each tool is judged on
// its own.
func TestSchemaIntakePerTool(t *testing.T) {
	tools := `[
	 {"name":"ok_a","description":"first","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}},
	 {"name":"ok_b","description":"second","inputSchema":{"type":"object"}},
	 {"name":"bad","inputSchema":{"type":"string","description":"a title"}},
	 {"name":"price","inputSchema":{"type":"object","properties":{"coin":{"type":"string"},"required":["coin"]}}},
	 {"name":"resize","inputSchema":{"type":"object",
	   "properties":{"mode":{"type":"string","enum":["quick","full"]},"size":{"type":"integer"}},
	   "required":["mode"],
	   "allOf":[{"if":{"properties":{"mode":{"const":"quick"}}},"then":{"properties":{"size":{"maximum":64}}}}]}},
	 {"name":"open_screen","inputSchema":{"type":"object",
	   "properties":{"screen":{"$ref":"#/$defs/Screen"},"list":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},
	   "required":["screen"],
	   "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}},
	 {"name":"open_legacy","inputSchema":{"type":"object",
	   "properties":{"screen":{"$ref":"#/definitions/Screen"}},"required":["screen"],
	   "definitions":{"Screen":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}}},
	 {"name":"open_tree","inputSchema":{"type":"object",
	   "properties":{"screen":{"$ref":"#/$defs/Screen"}},"required":["screen"],
	   "$defs":{"Screen":{"type":"object","properties":{"id":{"type":"string"},
	     "children":{"type":"array","items":{"$ref":"#/$defs/Screen"}}},"required":["id"]}}}},
	 {"name":"no_type","inputSchema":{"properties":{"q":{"type":"string"}},"required":["q"]}},
	 {"name":"no_schema"},
	 {"name":"ref_mix","inputSchema":{"type":"object","properties":{"s":{"$ref":"#/definitions/S"}},
	   "$defs":{"S":{"type":"string","minLength":2}}}},
	 {"name":"dangling","inputSchema":{"type":"object","properties":{"s":{"$ref":"#/$defs/Missing"}}}},
	 {"name":"hdr","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"X-O"}}}}
	]`
	m := connect(t, nil, scriptedServer("shapes", "scripted", tools))
	st := status(t, m, "shapes")
	if st.State != mcpclient.StateConnected {
		t.Fatalf("state %s: %s", st.State, st.Error)
	}
	if st.ToolsOffered != 13 || st.ToolsLoaded != 9 {
		t.Errorf("ToolsOffered/Loaded = %d/%d, want 13/9 (%s)", st.ToolsOffered, st.ToolsLoaded, st.Summary())
	}
	if !strings.Contains(st.Summary(), "9 of 13 tools loaded") {
		t.Errorf("Summary = %q", st.Summary())
	}
	reasons := map[string]string{}
	for _, q := range st.Quarantined {
		reasons[q.Tool] = q.Reason
	}
	// BH-033: the visible diagnostic names server, tool and the fault.
	if r := reasons["bad"]; !strings.Contains(r, `server "shapes" tool "bad": input schema top level must be type object, got string`) {
		t.Errorf("bad: reason %q", r)
	}
	// BH-037: the meta-schema check catches required inside properties.
	if r := reasons["price"]; !strings.Contains(r, `tool "price"`) || !strings.Contains(r, "/properties/required") {
		t.Errorf("price: reason %q", r)
	}
	if r := reasons["dangling"]; !strings.Contains(r, "#/$defs/Missing") {
		t.Errorf("dangling: reason %q", r)
	}
	// The SDK itself drops tools with bad x-mcp-header annotations; the
	// drop is shown, not silent.
	if r := reasons["hdr"]; !strings.Contains(r, `tool "hdr": refused by the MCP SDK`) || !strings.Contains(r, "x-mcp-header") {
		t.Errorf("hdr: reason %q", r)
	}
	if len(reasons) != 4 {
		t.Errorf("quarantined %v, want bad, price, dangling, hdr", reasons)
	}

	repairs := map[string]string{}
	for _, r := range st.Repairs {
		repairs[r.Tool] += r.What
	}
	for tl, want := range map[string]string{
		"no_type":   `added the missing top-level "type": "object" beside "properties"`,
		"no_schema": `no input schema; used {"type":"object"}`,
		"ref_mix":   `pointed $ref "#/definitions/S" at "#/$defs/S"`,
	} {
		if !strings.Contains(repairs[tl], want) {
			t.Errorf("repair of %s = %q, want %q", tl, repairs[tl], want)
		}
	}
	if len(repairs) != 3 {
		t.Errorf("repairs %v: only the three repairable tools should be touched", repairs)
	}

	// BH-033: the siblings are callable and route to the original names.
	if r := call(t, findTool(t, m, "shapes", "shapes__ok_a"), `{"x":"1"}`); r.IsError || r.AllText() != `called ok_a with {"x":"1"}` {
		t.Errorf("ok_a: %+v", r)
	}
	call(t, findTool(t, m, "shapes", "shapes__ok_b"), `{}`)

	// BH-031: the root allOf/if-then is kept and enforced locally.
	resize := findTool(t, m, "shapes", "shapes__resize")
	if !strings.Contains(string(resize.InputSchema()), `"allOf"`) {
		t.Errorf("resize schema lost its allOf: %s", resize.InputSchema())
	}
	if r := call(t, resize, `{"mode":"quick","size":100}`); !r.IsError || r.Stage != tool.Parameters {
		t.Errorf("quick/100 should fail locally at Parameters: %+v", r)
	}
	if r := call(t, resize, `{"mode":"full","size":100}`); r.IsError {
		t.Errorf("full/100: %s", r.AllText())
	}

	// BH-034: local refs resolve against the root, in all three variants.
	for _, name := range []string{"shapes__open_screen", "shapes__open_legacy", "shapes__open_tree"} {
		r := call(t, findTool(t, m, "shapes", name), `{"screen":{}}`)
		if !r.IsError || r.Stage != tool.Parameters || !strings.Contains(r.AllText(), "screen.id is required") {
			t.Errorf("%s with {screen:{}}: %+v", name, r)
		}
		if r := call(t, findTool(t, m, "shapes", name), `{"screen":{"id":"home"}}`); r.IsError {
			t.Errorf("%s: %s", name, r.AllText())
		}
	}
	// Repaired schemas enforce what the server meant.
	if r := call(t, findTool(t, m, "shapes", "shapes__no_type"), `{}`); !r.IsError || !strings.Contains(r.AllText(), "q is required") {
		t.Errorf("no_type without q: %+v", r)
	}
	if r := call(t, findTool(t, m, "shapes", "shapes__ref_mix"), `{"s":"x"}`); !r.IsError {
		t.Errorf("ref_mix minLength not enforced: %+v", r)
	}
}

// BH-039: names outside the providers' character set, a 90-character name,
// and names that sanitize alike, on a server whose name has a space.
func TestNamesBH039(t *testing.T) {
	long := strings.Repeat("abcdefghi_", 9)
	tools := `[
	 {"name":"admin.users.list","inputSchema":{"type":"object"}},
	 {"name":"user/profile-update","inputSchema":{"type":"object"}},
	 {"name":"` + long + `","inputSchema":{"type":"object"}},
	 {"name":"a.b","inputSchema":{"type":"object"}},
	 {"name":"a/b","inputSchema":{"type":"object"}},
	 {"name":"a_b","inputSchema":{"type":"object"}}
	]`
	mapping := func() map[string]mcpclient.Origin {
		m := connect(t, nil, scriptedServer("ops tools", "scripted", tools))
		out := map[string]mcpclient.Origin{}
		for _, tl := range m.Tools()["ops tools"] {
			if !providerName.MatchString(tl.Name()) {
				t.Errorf("name %q does not fit the providers' rules", tl.Name())
			}
			o, ok := m.Route(tl.Name())
			if !ok {
				t.Fatalf("no route for %s", tl.Name())
			}
			out[tl.Name()] = o
			// The bidirectional map sends the call to the original name.
			r := call(t, tl, `{}`)
			if want := "called " + o.Tool + " with {}"; r.AllText() != want {
				t.Errorf("%s: got %q, want %q", tl.Name(), r.AllText(), want)
			}
			if back, _ := m.Name(o.Server, o.Tool); back != tl.Name() {
				t.Errorf("Name(%q) = %q, want %q", o.Tool, back, tl.Name())
			}
		}
		if got := status(t, m, "ops tools").ToolsLoaded; got != 6 {
			t.Errorf("loaded %d of 6: %+v", got, status(t, m, "ops tools"))
		}
		return out
	}
	first := mapping()
	for _, want := range []string{"ops_tools__admin_users_list", "ops_tools__user_profile-update", "ops_tools__a_b"} {
		if _, ok := first[want]; !ok {
			t.Errorf("missing %s in %v", want, first)
		}
	}
	if o := first["ops_tools__a_b"]; o.Tool != "a_b" {
		t.Errorf("the exact name a_b keeps ops_tools__a_b, got %v", o)
	}
	var hashed int
	for name, o := range first {
		if o.Tool == long && (len(name) != 64 || !strings.HasPrefix(name, "ops_tools__abcdefghi_")) {
			t.Errorf("long name -> %q", name)
		}
		if strings.HasPrefix(name, "ops_tools__a_b_") {
			hashed++
		}
	}
	if hashed != 2 {
		t.Errorf("a.b and a/b should get distinct hashed names: %v", first)
	}
	// Same mapping on every start.
	second := mapping()
	if len(first) != len(second) {
		t.Fatalf("mappings differ: %v vs %v", first, second)
	}
	for k, v := range first {
		if second[k] != v {
			t.Errorf("start 2 maps %s to %v, start 1 to %v", k, second[k], v)
		}
	}
	if got, want := mcpclient.ToolName("ops tools", "admin.users.list"), "ops_tools__admin_users_list"; got != want {
		t.Errorf("ToolName = %q, want %q", got, want)
	}
}

// Two servers whose tools would share a name: a typed error, never a silent
// overwrite.
func TestCrossServerCollision(t *testing.T) {
	m := connect(t, nil,
		scriptedServer("a", "scripted", `[{"name":"b__c","inputSchema":{"type":"object"}}]`),
		scriptedServer("a__b", "scripted", `[{"name":"c","inputSchema":{"type":"object"}}]`))
	if got := len(m.Tools()["a"]); got != 1 {
		t.Errorf("server a: %d tools", got)
	}
	st := status(t, m, "a__b")
	if st.ToolsLoaded != 0 || len(st.Quarantined) != 1 {
		t.Fatalf("a__b: %+v", st)
	}
	q := st.Quarantined[0]
	var ce *mcpclient.CollisionError
	if !errors.Is(q.Err, mcpclient.ErrNameCollision) || !errors.As(q.Err, &ce) {
		t.Fatalf("quarantine error %v is not a collision", q.Err)
	}
	if ce.First != (mcpclient.Origin{Server: "a", Tool: "b__c"}) || ce.Second != (mcpclient.Origin{Server: "a__b", Tool: "c"}) {
		t.Errorf("collision %+v", ce)
	}
}

// BH-041: a hung server and a crashing one do not hold up a good one.
// First with an initialize timeout far beyond the test, so hang is still
// pending however slow the machine: ok connects and answers meanwhile, die
// fails with its own reason. Then with a 5 s timeout: hang fails with
// it, and the good server still answers.
func TestStartupHangDieOK(t *testing.T) {
	bin := nodeBin(t)
	hang := mcpclient.ServerConfig{Name: "hang", Type: "stdio", Command: "sh", Args: []string{"-c", "sleep 3600"}}
	servers := []mcpclient.ServerConfig{
		hang,
		{Name: "die", Type: "stdio", Command: "sh", Args: []string{"-c", "echo cannot open db >&2; exit 3"}},
		{Name: "ok", Type: "stdio", Command: filepath.Join(bin, "mcp-server-everything")},
	}
	m := mcpclient.Start(context.Background(), servers, &mcpclient.Options{InitTimeout: time.Hour, ShutdownTimeout: time.Second})
	defer m.Close()
	changed := make(chan struct{}, 10)
	defer m.Subscribe(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})()
	for _, name := range []string{"ok", "die"} { // each notifies when it connects or fails
		for status(t, m, name).State == mcpclient.StateConnecting {
			select {
			case <-changed:
			case <-time.After(time.Minute): // a hang guard
				t.Fatalf("%s still connecting after a minute", name)
			}
		}
	}

	// ok connects and works while hang is still in its handshake.
	if st := status(t, m, "ok"); st.State != mcpclient.StateConnected {
		t.Fatalf("ok: %s", st.Summary())
	}
	if hs := status(t, m, "hang"); hs.State != mcpclient.StateConnecting {
		t.Fatalf("hang: %s, want still connecting (its timeout is an hour)", hs.Summary())
	}
	r := call(t, findTool(t, m, "ok", "ok__echo"), `{"message":"while hang is pending"}`)
	if r.IsError || !strings.Contains(r.AllText(), "while hang is pending") {
		t.Errorf("ok__echo: %+v", r)
	}

	// die is failed with its exit status and stderr, not by the timeout.
	ds := status(t, m, "die")
	if ds.State != mcpclient.StateFailed || !strings.Contains(ds.Error, "exited with status 3") || !strings.Contains(ds.Error, "cannot open db") ||
		strings.Contains(ds.Error, "timed out") {
		t.Errorf("die: %+v", ds)
	}
	t.Logf("die marked failed after %v; ok connected after %v", ds.Elapsed, status(t, m, "ok").Elapsed)

	// A call to a failed server's tool fails at once, at Execution: it
	// waits for nothing (hang is pending for an hour).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	r = m.Call(ctx, &tool.Call{Name: "die__anything", Input: json.RawMessage(`{}`)})
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "cannot open db") {
		t.Errorf("call to die: %+v", r)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close with hang pending: %v", err)
	}

	// A short timeout: hang fails with it; the good server still answers.
	const initTimeout = 5 * time.Second // as connect gives scripted servers
	m = mcpclient.Start(context.Background(), []mcpclient.ServerConfig{hang,
		scriptedServer("good", "scripted", `[{"name":"ping","inputSchema":{"type":"object"}}]`)},
		&mcpclient.Options{InitTimeout: initTimeout, ShutdownTimeout: time.Second})
	defer m.Close()
	if err := m.Wait(ctx); err != nil {
		t.Fatalf("start did not end within a minute with init timeout %v: %v", initTimeout, err)
	}
	hs := status(t, m, "hang")
	if hs.State != mcpclient.StateFailed || !strings.Contains(hs.Error, "timed out after "+initTimeout.String()) {
		t.Errorf("hang: %+v", hs)
	}
	t.Logf("hang marked failed after %v (InitTimeout %v)", hs.Elapsed, initTimeout)
	if r := call(t, findTool(t, m, "good", "good__ping"), `{}`); r.IsError {
		t.Errorf("good after hang failed: %s", r.AllText())
	}
	r = m.Call(context.Background(), &tool.Call{Name: "hang__x"})
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "timed out") {
		t.Errorf("call to hang: %+v", r)
	}
}

// A server that writes non-JSON to stdout fails with that as its reason.
func TestGarbageOnStdout(t *testing.T) {
	m := connect(t, &mcpclient.Options{InitTimeout: 3 * time.Second}, scriptedServer("noisy", "garbage", `[]`))
	st := status(t, m, "noisy")
	if st.State != mcpclient.StateFailed || !strings.Contains(st.Error, `stdout is not JSON-RPC: "hello, I am a server that logs to stdout"`) {
		t.Errorf("noisy: %+v", st)
	}
	if strings.Contains(st.Error, "timed out") {
		t.Errorf("garbage should fail at once, not by timeout: %s", st.Error)
	}
}

// BH-042: a server writing 2 KiB of stderr per request answers 200 calls.
func TestStderrDrainedBH042(t *testing.T) {
	m := connect(t, &mcpclient.Options{StderrTailBytes: 8 << 10},
		scriptedServer("chatty", "scripted", `[{"name":"ping","inputSchema":{"type":"object"}}]`, "STDERR_PER_REQ", "2048"))
	ping := findTool(t, m, "chatty", "chatty__ping")
	start := time.Now()
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := ping.Call(ctx, &tool.Call{Name: ping.Name(), Input: json.RawMessage(`{"i":1}`)})
		cancel()
		if r.IsError {
			t.Fatalf("call %d: %s", i, r.AllText())
		}
	}
	t.Logf("200 calls with 2 KiB of stderr each took %v", time.Since(start))
	tail := status(t, m, "chatty").StderrTail
	if len(tail) == 0 || len(tail) > 8<<10 {
		t.Errorf("stderr tail is %d bytes, want 1..8192", len(tail))
	}
}

// BH-043: list_changed bursts re-fetch once; alpha goes, beta comes; the
// in-flight alpha call completes; a later one is told the tool is gone.
// The fixture holds the alpha call until beta is called, which happens
// only after the refresh, so the call is in flight while the tools change.
// Beta then offers gamma and announces it once: when gamma arrives, every
// refresh the burst could have caused has come before it (one refresher
// works through the notifications in order), and the fixture names any
// tools/list that no notification asked for.
func TestListChangedBH043(t *testing.T) {
	m := connect(t, &mcpclient.Options{ListChangedDebounce: time.Second},
		scriptedServer("live", "scripted", `[{"name":"alpha","inputSchema":{"type":"object"}}]`))
	var notified atomic.Int32
	changed := make(chan struct{}, 10)
	cancel := m.Subscribe(func() { notified.Add(1); changed <- struct{}{} })
	defer cancel()
	alpha := findTool(t, m, "live", "live__alpha")
	offered := func() map[string]bool {
		names := map[string]bool{}
		for _, tl := range m.Tools()["live"] {
			names[tl.Name()] = true
		}
		return names
	}
	waitFor := func(name string) {
		t.Helper()
		for !offered()[name] {
			select {
			case <-changed:
			case <-time.After(30 * time.Second): // a hang guard
				t.Fatalf("no refresh bringing %s; tools %v", name, offered())
			}
		}
	}

	inflight := make(chan *tool.Result, 1)
	go func() { inflight <- call(t, alpha, `{}`) }() // held by the fixture until beta is called
	waitFor("live__beta")
	if names := offered(); names["live__alpha"] || len(names) != 1 {
		t.Errorf("tools after refresh: %v", names)
	}
	if _, ok := m.Route("live__alpha"); ok {
		t.Error("alpha is still routed")
	}
	select {
	case r := <-inflight:
		t.Fatalf("the alpha call ended before the fixture answered it: %+v", r)
	default:
	}
	if r := call(t, findTool(t, m, "live", "live__beta"), `{}`); r.IsError {
		t.Errorf("beta: %s", r.AllText())
	}
	select {
	case r := <-inflight:
		if r.IsError || r.AllText() != "alpha done" {
			t.Errorf("in-flight alpha: %+v", r)
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the in-flight alpha call did not complete after the fixture answered it")
	}
	for _, r := range []*tool.Result{
		call(t, alpha, `{}`), // a held reference
		m.Call(context.Background(), &tool.Call{Name: "live__alpha"}), // by name
	} {
		if !r.IsError || r.Stage != tool.Discovery || !strings.Contains(r.AllText(), "tool no longer offered by server live") {
			t.Errorf("later alpha call: %+v", r)
		}
	}

	waitFor("live__gamma")
	waitStderr(t, m, "live", "tools/list #3\n") // stderr is read apart from the replies
	tail := status(t, m, "live").StderrTail
	if lists := strings.Count(tail, "tools/list #"); lists != 3 || strings.Contains(tail, "unasked") {
		t.Errorf("tools/list fetched %d times, want 3 (start + one per burst + gamma's); stderr:\n%s", lists, tail)
	}
	if n := notified.Load(); n != 2 {
		t.Errorf("subscribers notified %d times, want 2 (one per refresh)", n)
	}
}

// isError results, content mapping, a crash after connect, annotations.
func TestCallsAndDisconnect(t *testing.T) {
	tools := `[
	 {"name":"fail","inputSchema":{"type":"object"}},
	 {"name":"rich","inputSchema":{"type":"object"}},
	 {"name":"crash","inputSchema":{"type":"object"},
	  "annotations":{"destructiveHint":true,"readOnlyHint":false,"idempotentHint":true,"title":"Crash it"}}
	]`
	// Restoration off (MaxRestarts < 0): a lost server is disconnected
	// and its tools removed. TestStdioRespawn covers the default policy.
	m := connect(t, &mcpclient.Options{MaxRestarts: -1}, scriptedServer("svc", "scripted", tools))
	r := call(t, findTool(t, m, "svc", "svc__fail"), `{}`)
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "boom: disk full") {
		t.Errorf("fail: %+v", r)
	}

	r = call(t, findTool(t, m, "svc", "svc__rich"), `{}`)
	if r.IsError || len(r.Content) != 5 {
		t.Fatalf("rich: %+v", r)
	}
	if c := r.Content[1]; c.Type != tool.ImageContent || c.MIMEType != "image/png" || len(c.Data) == 0 {
		t.Errorf("image: %+v", c)
	}
	text := r.AllText()
	for _, want := range []string{"hello", "[audio audio/wav, 3 bytes, not shown]", "[resource link: file:///tmp/a.txt (a.txt)]", "[resource file:///tmp/b.txt, text/plain]\nbee"} {
		if !strings.Contains(text, want) {
			t.Errorf("rich text lacks %q:\n%s", want, text)
		}
	}
	if r.Evidence["mcp_server"] != "svc" || r.Evidence["mcp_tool"] != "rich" {
		t.Errorf("evidence %v", r.Evidence)
	}

	crash := findTool(t, m, "svc", "svc__crash")
	if a := crash.Annotations(); a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint || a.Title != "Crash it" {
		t.Errorf("annotations %+v", a)
	}
	changed := make(chan struct{}, 10)
	defer m.Subscribe(func() { changed <- struct{}{} })()
	r = call(t, crash, `{}`)
	if !r.IsError || r.Stage != tool.Execution {
		t.Errorf("crash call: %+v", r)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after the server exited")
	}
	st := status(t, m, "svc")
	if st.State != mcpclient.StateDisconnected || !strings.Contains(st.Error, "exited with status 7") || !strings.Contains(st.Error, "fatal: lost the database") {
		t.Errorf("after crash: %+v", st)
	}
	if _, ok := m.Tools()["svc"]; ok {
		t.Error("a disconnected server's tools are still listed")
	}
	// Fails at once with the reason (no CallTimeout here: a call that
	// waited on the dead server would end only with the guard's ctx).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	r = findToolHeld(crash).Call(ctx, &tool.Call{ID: "c1", Name: crash.Name(), Input: json.RawMessage(`{}`)})
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "is disconnected") {
		t.Errorf("call after disconnect: %+v", r)
	}
}

func findToolHeld(t *tool.Tool) *tool.Tool { return t }

// waitStderr waits (bounded) until server's stderr tail contains want.
func waitStderr(t *testing.T, m *mcpclient.Manager, server, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(status(t, m, server).StderrTail, want) {
		if time.Now().After(deadline) {
			t.Fatalf("server %s never wrote %q to stderr; it wrote:\n%s", server, want, status(t, m, server).StderrTail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Cancelling the caller's ctx ends the call and tells the server. The
// cancel comes when the fixture reports (a progress notification) that it
// holds the call, which it never answers.
func TestCancellation(t *testing.T) {
	m := connect(t, nil, scriptedServer("slowpoke", "scripted", `[{"name":"slow","inputSchema":{"type":"object"}}]`))
	slow := findTool(t, m, "slowpoke", "slowpoke__slow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var received atomic.Bool
	done := make(chan *tool.Result, 1)
	go func() {
		done <- slow.Call(ctx, &tool.Call{Name: slow.Name(), Events: func(e tool.Event) {
			if e.Kind == tool.EventProgress && e.Message == "slow: received" {
				received.Store(true)
				cancel()
			}
		}})
	}()
	var r *tool.Result
	select {
	case r = <-done:
	case <-time.After(time.Minute): // a hang guard
		t.Fatalf("the call did not end after the cancel (server reported it: %v)", received.Load())
	}
	if !received.Load() {
		t.Fatalf("the call ended before the server reported it: %+v", r)
	}
	if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "cancelled") {
		t.Errorf("cancelled call: %+v", r)
	}
	waitStderr(t, m, "slowpoke", "cancelled request") // notifications/cancelled reached the server
}

func TestDisabledAndMissingCommand(t *testing.T) {
	m := connect(t, nil,
		mcpclient.ServerConfig{Name: "off", Type: "stdio", Command: "true", Disabled: true},
		mcpclient.ServerConfig{Name: "nope", Type: "stdio", Command: "/nonexistent/mcp-server"})
	if st := status(t, m, "off"); st.State != mcpclient.StateDisabled {
		t.Errorf("off: %+v", st)
	}
	if st := status(t, m, "nope"); st.State != mcpclient.StateFailed || !strings.Contains(st.Error, "cannot start") {
		t.Errorf("nope: %+v", st)
	}
}

// Close ends every server, the one still starting included, and leaves no
// goroutine behind. (The init timeout is an hour: hang is still starting
// at Close however slow the machine, and one and two never time out.)
func TestCloseLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := mcpclient.Start(context.Background(), []mcpclient.ServerConfig{
		scriptedServer("one", "scripted", `[{"name":"x","inputSchema":{"type":"object"}}]`),
		scriptedServer("two", "scripted", `[{"name":"y","inputSchema":{"type":"object"}}]`),
		{Name: "hang", Type: "stdio", Command: "sh", Args: []string{"-c", "sleep 3600"}},
	}, &mcpclient.Options{InitTimeout: time.Hour, ShutdownTimeout: time.Second})
	changed := make(chan struct{}, 1)
	cancel := m.Subscribe(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	for _, name := range []string{"one", "two"} {
		for status(t, m, name).State == mcpclient.StateConnecting {
			select {
			case <-changed:
			case <-time.After(time.Minute): // a hang guard
				t.Fatalf("%s still connecting after a minute", name)
			}
		}
	}
	cancel()
	if st := status(t, m, "hang"); st.State != mcpclient.StateConnecting {
		t.Fatalf("hang: %s, want still connecting", st.Summary())
	}
	var wg sync.WaitGroup
	for _, name := range []string{"one__x", "two__y"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := m.Call(context.Background(), &tool.Call{Name: name}); r.IsError {
				t.Errorf("%s: %s", name, r.AllText())
			}
		}()
	}
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, s := range m.Servers() {
		if s.State == mcpclient.StateConnected {
			t.Errorf("%s still connected after Close", s.Name)
		}
	}
}

// nodeBin returns node_modules/.bin at the repository root.
func nodeBin(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod)")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	for _, s := range []string{"mcp-server-memory", "mcp-server-everything", "mcp-server-filesystem"} {
		if _, err := os.Stat(filepath.Join(bin, s)); err != nil {
			t.Fatalf("%s is missing: run `bash scripts/test` (it runs `npm ci` from package-lock.json) first", filepath.Join(bin, s))
		}
	}
	return bin
}

// A server that connects while Start is still adding later (disabled)
// servers: every server is in the manager before the first connects, so
// the connect's walk over all servers never races the additions (the race
// detector caught it in `aibuddy tools` with a Codex file whose disabled
// server sorted after an enabled one).
func TestStartAddsEveryServerBeforeConnecting(t *testing.T) {
	servers := []mcpclient.ServerConfig{scriptedServer("a", "scripted", `[{"name":"t","inputSchema":{"type":"object"}}]`)}
	for i := range 5000 {
		servers = append(servers, mcpclient.ServerConfig{Name: fmt.Sprintf("off%04d", i), Type: mcpclient.TypeStdio, Command: "/nonexistent", Disabled: true})
	}
	m := connect(t, nil, servers...)
	if st := status(t, m, "a"); st.State != mcpclient.StateConnected {
		t.Fatalf("a: %+v", st)
	}
	if st := status(t, m, "off4999"); st.State != mcpclient.StateDisabled {
		t.Fatalf("off4999: %+v", st)
	}
}
