package mcpclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/internal/fixtures/fxmrtr"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// The protocol versions of the MCP spec, newest first.
var specVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// mrtrStdio is the fixture fx-mrtr as a stdio server process (this test
// binary re-executed), speaking only versions (all when empty).
func mrtrStdio(name string, versions ...string) mcpclient.ServerConfig {
	args := "-stdio=true" // any argument: the variable must not be empty
	if len(versions) > 0 {
		args = "-versions " + strings.Join(versions, ",")
	}
	return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeStdio, Command: os.Args[0],
		Args: []string{"-test.run=^$"}, Env: map[string]string{fxmrtr.EnvArgs: args}}
}

// mrtrHTTP starts the fixture as a streamable HTTP server process and
// returns its configuration; the process ends with the test.
func mrtrHTTP(t *testing.T, name string, versions ...string) mcpclient.ServerConfig {
	t.Helper()
	args := "-http"
	if len(versions) > 0 {
		args += " -versions " + strings.Join(versions, ",")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fxmrtr.EnvArgs+"="+args)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("fixture did not say where it listens: %q, %v", line, err)
	}
	return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeHTTP, URL: url}
}

// scripted is an Elicitor that answers from a list and keeps what it was
// asked.
type scripted struct {
	mu      sync.Mutex
	answers []*mcp.ElicitResult
	asked   []mcpclient.Elicitation
}

func (s *scripted) elicit(_ context.Context, e mcpclient.Elicitation) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, e)
	if len(s.answers) == 0 {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	return a, nil
}

func (s *scripted) questions() []mcpclient.Elicitation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mcpclient.Elicitation(nil), s.asked...)
}

var accept = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}

func mrtrCall(t *testing.T, m *mcpclient.Manager, id, name, input string) *tool.Result {
	t.Helper()
	return m.Call(context.Background(), &tool.Call{ID: id, Name: name, Input: json.RawMessage(input)})
}

// Version negotiation, each pair with real processes: aibuddy's client
// (offering every version, or pinned to one by mcp.protocolVersion)
// against the fixture pinned to one version, over stdio and streamable
// HTTP. Both sides must settle on the same version: the client's status
// and the server's own view (its protocol_version tool) agree.
func TestProtocolVersionMatrix(t *testing.T) {
	type pair struct{ client, server, want string }
	var pairs []pair
	for _, v := range specVersions {
		pairs = append(pairs, pair{"", v, v}, pair{v, "", v})
	}
	var servers []mcpclient.ServerConfig
	want := map[string]pair{}
	for i, p := range pairs {
		if p.client != "" {
			continue // client pins need their own Manager, below
		}
		name := "s" + strings.ReplaceAll(p.server, "-", "")
		servers = append(servers, mrtrStdio(name+"stdio", p.server), mrtrHTTP(t, name+"http", p.server))
		want[name+"stdio"], want[name+"http"] = pairs[i], pairs[i]
	}
	check := func(m *mcpclient.Manager, name string, p pair) {
		t.Helper()
		st := status(t, m, name)
		if st.State != mcpclient.StateConnected {
			t.Errorf("%s (client %q, server %q): %s", name, p.client, p.server, st.Summary())
			return
		}
		r := mrtrCall(t, m, "v", name+"__protocol_version", `{}`)
		if st.Protocol != p.want || r.AllText() != p.want {
			t.Errorf("%s (client offers %q, server speaks %q): client says %q, server says %q; want %q",
				name, p.client, p.server, st.Protocol, r.AllText(), p.want)
		}
	}
	m := connect(t, nil, servers...)
	for name, p := range want {
		check(m, name, p)
	}
	for _, p := range pairs {
		if p.client == "" {
			continue
		}
		// Over HTTP a server speaking 2026-07-28 is stateless, where an
		// older session cannot be told apart from the next request; the
		// one for older clients speaks every older version, statefully.
		web := mrtrHTTP(t, "http")
		if p.client != "2026-07-28" {
			web = mrtrHTTP(t, "http", specVersions[1:]...)
		}
		m := connect(t, &mcpclient.Options{ProtocolVersion: p.client}, mrtrStdio("stdio"), web)
		check(m, "stdio", p)
		check(m, "http", p)
	}
}

// BH-069 with fx-http speaking 2026-07-28 (stateless streamable HTTP) and
// the same fixture over stdio: apply_change's input-required reply
// reaches the Elicitor with the server's form, the call is sent again
// with the answer and the exact requestState, and the user's answer is
// in the result as theirs.
func TestMRTRApplyChange(t *testing.T) {
	for _, sc := range []mcpclient.ServerConfig{mrtrHTTP(t, "fx", "2026-07-28"), mrtrStdio("fx", "2026-07-28")} {
		t.Run(sc.Type, func(t *testing.T) {
			el := &scripted{answers: []*mcp.ElicitResult{accept}}
			m := connect(t, &mcpclient.Options{Elicit: el.elicit}, sc)
			if st := status(t, m, "fx"); st.Protocol != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28 (%s)", st.Protocol, st.Summary())
			}
			r := mrtrCall(t, m, "call-1", "fx__apply_change", `{"id":"c1"}`)
			if r.IsError || !strings.Contains(r.AllText(), "change c1 applied to staging after 1 round(s)") {
				t.Fatalf("accept: %s", r.AllText())
			}
			if !strings.Contains(r.AllText(), `[MCP server fx asked the user: "confirm deploy to staging?". The user answered: accept {"confirm":true}]`) {
				t.Errorf("the user's answer is not in the result as theirs: %s", r.AllText())
			}
			q := el.questions()
			if len(q) != 1 || q[0].Server != "fx" || q[0].Tool != "apply_change" || q[0].Round != 1 || q[0].Key != "confirm" ||
				q[0].Call == nil || q[0].Call.ID != "call-1" || q[0].Params.Message != fxmrtr.Question {
				t.Fatalf("asked %+v", q)
			}

			// Decline ends the call with the server's result, not a hang
			// and not an error.
			el.answers = []*mcp.ElicitResult{{Action: "decline"}}
			r = mrtrCall(t, m, "call-2", "fx__apply_change", `{"id":"c2"}`)
			if r.IsError || !strings.Contains(r.AllText(), "change c2 not applied: the user chose decline") {
				t.Errorf("decline: %+v", r)
			}

			// Two rounds: each question is asked, each answer sent with
			// its own round's state.
			el.answers = []*mcp.ElicitResult{accept}
			r = mrtrCall(t, m, "call-3", "fx__apply_change", `{"id":"twice"}`)
			if r.IsError || !strings.Contains(r.AllText(), "applied to staging after 2 round(s)") {
				t.Errorf("two rounds: %s", r.AllText())
			}

			// A requestState tampered with in round 2: the server refuses
			// round 3, and that error is what the call returns.
			r = mrtrCall(t, m, "call-4", "fx__apply_change", `{"id":"tamper"}`)
			if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "requestState failed verification") {
				t.Errorf("tampered state: %+v", r)
			}

			// No answer is replayed: every call asked anew (1 + 1 + 2 + 2).
			if n := len(el.questions()); n != 6 {
				t.Errorf("%d questions over four calls, want 6: %+v", n, el.questions())
			}
		})
	}
}

// A server that asks every round is stopped after mcp.maxInputRounds
// rounds, with an error naming the setting.
func TestMRTRRoundLimit(t *testing.T) {
	for _, max := range []int{0, 2} {
		el := &scripted{answers: []*mcp.ElicitResult{accept}}
		m := connect(t, &mcpclient.Options{Elicit: el.elicit, MaxInputRounds: max}, mrtrStdio("fx", "2026-07-28"))
		r := mrtrCall(t, m, "c", "fx__apply_change", `{"id":"forever"}`)
		want := max
		if want == 0 {
			want = mcpclient.DefaultMaxInputRounds
		}
		if !r.IsError || r.Stage != tool.Execution || !strings.Contains(r.AllText(), "mcp.maxInputRounds") {
			t.Errorf("max %d: %+v", max, r)
		}
		if n := len(el.questions()); n != want {
			t.Errorf("max %d: asked %d times, want %d", max, n, want)
		}
	}
}

// Only what is wired is advertised: with an Elicitor, elicitation with
// form mode and never URL mode; without one, no elicitation at all, and
// a server that asks anyway gets no answer made up: the call fails at
// the Authorization stage saying nobody can be asked.
func TestElicitationAdvertisedOnlyWhenWired(t *testing.T) {
	el := &scripted{}
	with := connect(t, &mcpclient.Options{Elicit: el.elicit}, mrtrStdio("fx", "2026-07-28"), mrtrStdio("old", "2025-11-25"))
	for _, s := range []string{"fx", "old"} {
		r := mrtrCall(t, with, "c", s+"__client_capabilities", `{}`)
		if got := r.AllText(); got != `{"elicitation":{"form":{}}}` {
			t.Errorf("%s with an Elicitor: the server saw %s", s, got)
		}
	}
	without := connect(t, nil, mrtrStdio("fx", "2026-07-28"))
	if got := mrtrCall(t, without, "c", "fx__client_capabilities", `{}`).AllText(); got != `{"elicitation":null}` {
		t.Errorf("without an Elicitor: the server saw %s", got)
	}
	r := mrtrCall(t, without, "c", "fx__apply_change", `{"id":"c1"}`)
	if !r.IsError || r.Stage != tool.Authorization || !strings.Contains(r.AllText(), "nobody can be asked") {
		t.Errorf("asked without an Elicitor: %+v", r)
	}
}

// Classic server->client elicitation/create (the fixture pinned to an
// older version: the Go SDK sends its input request as elicitation/create)
// goes through the same Elicitor, tied to the call in flight, over stdio
// and streamable HTTP (the request arrives on the call's event stream).
func TestClassicElicitation(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18", "http 2025-11-25"} {
		el := &scripted{answers: []*mcp.ElicitResult{accept}}
		sc := mrtrStdio("fx", v)
		if web, ok := strings.CutPrefix(v, "http "); ok {
			sc = mrtrHTTP(t, "fx", web)
		}
		m := connect(t, &mcpclient.Options{Elicit: el.elicit}, sc)
		r := mrtrCall(t, m, "call-9", "fx__apply_change", `{"id":"c1"}`)
		if r.IsError || !strings.Contains(r.AllText(), "change c1 applied") || !strings.Contains(r.AllText(), "The user answered: accept") {
			t.Errorf("%s: %s", v, r.AllText())
		}
		q := el.questions()
		if len(q) != 1 || q[0].Round != 0 || q[0].Tool != "apply_change" || q[0].Call == nil || q[0].Call.ID != "call-9" {
			t.Errorf("%s: asked %+v", v, q)
		}
		el.answers = []*mcp.ElicitResult{{Action: "decline"}}
		if r := mrtrCall(t, m, "call-10", "fx__apply_change", `{"id":"c2"}`); r.IsError || !strings.Contains(r.AllText(), "not applied") {
			t.Errorf("%s decline: %+v", v, r)
		}
	}
}

// aibuddy run's way: the form becomes ask_user_question prompts on the
// terminal, one per field, headed by the server's name and message; an
// empty line declines the form.
func TestFormElicitorOnTerminal(t *testing.T) {
	var out strings.Builder
	term := approval.NewTerminal(strings.NewReader("yes\n\n"), &out)
	m := connect(t, &mcpclient.Options{Elicit: mcpclient.FormElicitor(term)}, mrtrStdio("fx", "2026-07-28"))
	r := mrtrCall(t, m, "c", "fx__apply_change", `{"id":"c1"}`)
	if r.IsError || !strings.Contains(r.AllText(), "change c1 applied") {
		t.Fatalf("yes: %s", r.AllText())
	}
	if !strings.Contains(out.String(), "MCP server fx asks (during apply_change): confirm deploy to staging?\nConfirm — Deploy the change.") ||
		!strings.Contains(out.String(), "1) yes") {
		t.Errorf("terminal shows %q", out.String())
	}
	if r := mrtrCall(t, m, "c", "fx__apply_change", `{"id":"c2"}`); r.IsError || !strings.Contains(r.AllText(), "not applied: the user chose decline") {
		t.Errorf("empty line: %+v", r)
	}
}

// The reference server-everything (TypeScript SDK, newest version
// 2025-11-25): aibuddy offers 2026-07-28, server/discover fails, and the
// two settle on 2025-11-25 through initialize. Its elicitation tool,
// registered only for a client that declares elicitation, sends a classic
// elicitation/create that reaches the Elicitor; its URL elicitation tool
// stays away, since aibuddy never declares URL mode.
func TestServerEverythingElicitation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Node.js server")
	}
	everything := mcpclient.ServerConfig{Name: "everything", Type: mcpclient.TypeStdio, Command: nodeBin(t) + "/mcp-server-everything"}
	el := &scripted{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"name": "Ada", "check": true}}, {Action: "decline"}}}
	m := connect(t, &mcpclient.Options{Elicit: el.elicit, InitTimeout: 20 * time.Second}, everything)
	st := status(t, m, "everything")
	if st.State != mcpclient.StateConnected || st.Protocol != "2025-11-25" {
		t.Fatalf("%s, protocol %q", st.Summary(), st.Protocol)
	}
	if _, ok := m.Name("everything", "trigger-url-elicitation"); ok {
		t.Error("the URL elicitation tool is offered, so URL mode was declared")
	}
	r := mrtrCall(t, m, "e1", "everything__trigger-elicitation-request", `{}`)
	if r.IsError || !strings.Contains(r.AllText(), "- Name: Ada") || !strings.Contains(r.AllText(), "- Agreed to terms: true") {
		t.Errorf("accept: %s", r.AllText())
	}
	if q := el.questions(); len(q) != 1 || q[0].Tool != "trigger-elicitation-request" || q[0].Call.ID != "e1" {
		t.Errorf("asked %+v", q)
	}
	if r := mrtrCall(t, m, "e2", "everything__trigger-elicitation-request", `{}`); r.IsError || !strings.Contains(r.AllText(), "User declined") {
		t.Errorf("decline: %s", r.AllText())
	}
	without := connect(t, &mcpclient.Options{InitTimeout: 20 * time.Second}, everything)
	if _, ok := without.Name("everything", "trigger-elicitation-request"); ok {
		t.Error("without an Elicitor the server still saw elicitation declared")
	}
}

// Two calls in flight on one server: a classic elicitation/create cannot
// be tied to either, so it is refused (the server sees the error) rather
// than put to the wrong call's user; the call that asked first, alone,
// was asked normally.
func TestClassicElicitationAmbiguousIsRefused(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	elicit := func(ctx context.Context, e mcpclient.Elicitation) (*mcp.ElicitResult, error) {
		close(asked)
		<-release
		return accept, nil
	}
	m := connect(t, &mcpclient.Options{Elicit: elicit}, mrtrStdio("fx", "2025-11-25"))
	first := make(chan *tool.Result)
	go func() { first <- mrtrCall(t, m, "a", "fx__apply_change", `{"id":"a"}`) }()
	<-asked
	r := mrtrCall(t, m, "b", "fx__apply_change", `{"id":"b"}`)
	if !r.IsError || !strings.Contains(r.AllText(), "cannot tie this elicitation to a call (2 calls in flight") {
		t.Errorf("second call: %+v", r)
	}
	close(release)
	if r := <-first; r.IsError || !strings.Contains(r.AllText(), "change a applied") {
		t.Errorf("first call: %s", r.AllText())
	}
}

// server-everything (TypeScript SDK 1.32, newest version 2025-11-25) over
// stdio and streamable HTTP, with aibuddy offering each version: the two
// settle on min(offer, 2025-11-25), and a call works on each.
func TestServerEverythingVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node.js servers")
	}
	node := nodeBin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close() // the server takes the port; a clash would fail its start, not pass wrongly
	web := exec.Command(node+"/mcp-server-everything", "streamableHttp")
	web.Env = append(os.Environ(), "PORT="+port)
	stderr, err := web.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Process.Kill(); _ = web.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on port") {
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	for _, offer := range specVersions {
		want := offer
		if offer == "2026-07-28" {
			want = "2025-11-25"
		}
		m := connect(t, &mcpclient.Options{ProtocolVersion: offer, InitTimeout: 20 * time.Second},
			mcpclient.ServerConfig{Name: "stdio", Type: mcpclient.TypeStdio, Command: node + "/mcp-server-everything"},
			mcpclient.ServerConfig{Name: "http", Type: mcpclient.TypeHTTP, URL: "http://127.0.0.1:" + port + "/mcp"})
		for _, name := range []string{"stdio", "http"} {
			st := status(t, m, name)
			if st.State != mcpclient.StateConnected || st.Protocol != want {
				t.Errorf("offer %s over %s: %s, protocol %q, want %q", offer, name, st.Summary(), st.Protocol, want)
				continue
			}
			if r := mrtrCall(t, m, "e", name+"__echo", `{"message":"v `+offer+`"}`); r.IsError || !strings.Contains(r.AllText(), "v "+offer) {
				t.Errorf("offer %s over %s: echo: %s", offer, name, r.AllText())
			}
		}
	}
}
