package mcpclient_test

// Scripted MCP servers for the tests. The test binary re-executes itself
// with MCPCLIENT_TEST_SERVER set (the go-sdk's own pattern) and speaks raw
// newline-delimited JSON-RPC on stdin/stdout. Raw, not the SDK's server,
// because several cases need what a correct server never sends: a schema
// whose top level is a string, garbage on stdout, notification bursts.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/aibuddy/aibuddy/mcpclient"
)

const serverEnv = "MCPCLIENT_TEST_SERVER"

// scriptedServer returns the configuration of a re-executed test server of
// the given kind. tools is the raw JSON array served by tools/list; extra
// env adds knobs (STDERR_PER_REQ bytes written to stderr per request).
func scriptedServer(name, kind, tools string, env ...string) mcpclient.ServerConfig {
	e := map[string]string{serverEnv: kind, "MCPCLIENT_TOOLS": tools}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return mcpclient.ServerConfig{Name: name, Type: mcpclient.TypeStdio, Command: os.Args[0],
		Args: []string{"-test.run=^$"}, Env: e}
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// runTestServer serves one scripted server until stdin closes.
func runTestServer(kind string) {
	// MCPCLIENT_WRITE_AT_START names files the server tries to create
	// first (":"-separated), reporting each on stderr.
	for _, p := range strings.Split(os.Getenv("MCPCLIENT_WRITE_AT_START"), ":") {
		if p == "" {
			continue
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "write refused:", err)
		} else {
			fmt.Fprintln(os.Stderr, "wrote", p)
		}
	}
	switch kind {
	case "passthru": // an SDK server with resources and prompts (passthru_test.go)
		runPassthruServer()
		return
	case "garbage":
		fmt.Println("hello, I am a server that logs to stdout")
		_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until stdin closes
		return
	}
	s := &rawServer{out: bufio.NewWriter(os.Stdout), half: make(chan struct{}), echoed: make(chan struct{}), release: make(chan struct{})}
	if err := json.Unmarshal([]byte(os.Getenv("MCPCLIENT_TOOLS")), &s.tools); err != nil {
		fmt.Fprintln(os.Stderr, "bad MCPCLIENT_TOOLS:", err)
		os.Exit(2)
	}
	s.chatty, _ = strconv.Atoi(os.Getenv("STDERR_PER_REQ"))
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var wg sync.WaitGroup
	for sc.Scan() {
		var m rpcMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad frame:", err)
			continue
		}
		if s.chatty > 0 {
			os.Stderr.WriteString(strings.Repeat("x", s.chatty-1) + "\n")
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.handle(m) }()
	}
	wg.Wait()
}

type rawServer struct {
	mu     sync.Mutex
	out    *bufio.Writer
	tools  []json.RawMessage
	calls  int
	lists  int
	chatty int

	halfOnce sync.Once
	half     chan struct{} // closed when a flood is half sent
	echoed   chan struct{} // closed when the echo during a flood is answered
	echoOnce sync.Once
	// BH-043: the first alpha call is held until beta is called (release).
	release     chan struct{}
	releaseOnce sync.Once
	// sinceList counts the list_changed notifications sent since the last
	// tools/list; a tools/list with none is a refresh nothing asked for.
	sinceList int
}

func (s *rawServer) send(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

// listChanged sends notifications/tools/list_changed.
func (s *rawServer) listChanged() {
	s.mu.Lock()
	s.sinceList++
	s.mu.Unlock()
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
}

func (s *rawServer) reply(id json.RawMessage, result any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *rawServer) fail(id json.RawMessage, code int, msg string) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (s *rawServer) handle(m rpcMsg) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		s.reply(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "scripted", "version": "1.0"},
		})
	case "notifications/initialized":
	case "notifications/cancelled":
		fmt.Fprintf(os.Stderr, "cancelled request %s\n", m.Params)
	case "ping":
		s.reply(m.ID, map[string]any{})
	case "tools/list":
		s.mu.Lock()
		s.lists++
		n, tools, asked := s.lists, append([]json.RawMessage(nil), s.tools...), s.sinceList > 0
		s.sinceList = 0
		s.mu.Unlock()
		if n > 1 && !asked { // written first: seen whenever "#n" is
			fmt.Fprintf(os.Stderr, "unasked refresh: list %d came with no list_changed since the previous one\n", n)
		}
		fmt.Fprintf(os.Stderr, "tools/list #%d\n", n)
		s.reply(m.ID, map[string]any{"tools": tools})
	case "tools/call":
		s.call(m)
	default:
		if len(m.ID) > 0 {
			s.fail(m.ID, -32601, "method not found: "+m.Method)
		}
	}
}

func (s *rawServer) call(m rpcMsg) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	text := func(t string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}}
	}
	switch p.Name {
	case "fail":
		r := text("boom: disk full")
		r["isError"] = true
		s.reply(m.ID, r)
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: lost the database")
		os.Exit(7)
	case "slow":
		// Tell the caller the call arrived (a progress notification, when
		// it sent a token), then never answer: until cancelled and killed.
		if p.Meta.ProgressToken != nil {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1, "message": "slow: received"}})
		}
		select {}
	case "alpha":
		// BH-043: after the first call, offer beta instead of alpha and
		// announce it three times in quick succession; answer only when
		// beta is called, so the call is in flight across the refresh.
		s.mu.Lock()
		s.calls++
		first := s.calls == 1
		if first {
			s.tools = []json.RawMessage{json.RawMessage(`{"name":"beta","inputSchema":{"type":"object"}}`)}
		}
		s.mu.Unlock()
		if first {
			for range 3 {
				s.listChanged()
			}
			<-s.release
		}
		s.reply(m.ID, text("alpha done"))
	case "flood":
		// Issue 10: n notifications in a tight loop (message, progress,
		// list_changed in turn); half way it waits until the call of
		// "echo" has been answered, then sends the rest and the result.
		var a struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal(p.Arguments, &a)
		for i := range a.N {
			if i == a.N/2 {
				s.halfOnce.Do(func() { close(s.half) })
				<-s.echoed
			}
			var note map[string]any
			switch i % 3 {
			case 0:
				note = map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
					"params": map[string]any{"level": "info", "data": fmt.Sprintf("step %d", i)}}
			case 1:
				note = map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": "t", "progress": i}}
			default:
				note = map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
			}
			b, _ := json.Marshal(note)
			s.mu.Lock()
			s.out.Write(b)
			s.out.WriteByte('\n')
			s.mu.Unlock()
		}
		s.reply(m.ID, text(fmt.Sprintf("flooded %d", a.N)))
	case "change_in_flood":
		// 200 log messages (past any small bound), then a new tool list
		// announced by list_changed notifications that will be dropped.
		for i := range 200 {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
				"params": map[string]any{"level": "info", "data": fmt.Sprintf("line %d", i)}})
		}
		s.mu.Lock()
		s.tools = []json.RawMessage{json.RawMessage(`{"name":"beta","inputSchema":{"type":"object"}}`)}
		s.mu.Unlock()
		for range 5 {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		}
		s.reply(m.ID, text("changed"))
	case "echo":
		<-s.half // answered in the middle of the flood
		s.reply(m.ID, text("echo"))
		s.echoOnce.Do(func() { close(s.echoed) })
	case "deep_result":
		// A result nested 1,500 levels deep: past what the SDK reads.
		deep := strings.Repeat(`{"a":`, 1500) + `1` + strings.Repeat(`}`, 1500)
		s.reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "deep"}},
			"structuredContent": json.RawMessage(deep)})
	case "beta":
		// BH-043: release the held alpha call, then offer gamma instead and
		// announce it once: a later refresh to wait for.
		s.releaseOnce.Do(func() { close(s.release) })
		s.mu.Lock()
		s.tools = []json.RawMessage{json.RawMessage(`{"name":"gamma","inputSchema":{"type":"object"}}`)}
		s.mu.Unlock()
		s.listChanged()
		s.reply(m.ID, text("beta done"))
	case "surrogate":
		// BH-097 (b): a text whose JSON holds a high surrogate escape
		// without its low half, beside a proper pair (an emoji).
		s.reply(m.ID, map[string]any{"content": json.RawMessage(`[{"type":"text","text":"ok \ud800 end \ud83d\ude00"}]`)})
	case "rich":
		s.reply(m.ID, map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "hello"},
			map[string]any{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
			map[string]any{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
			map[string]any{"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///tmp/b.txt", "mimeType": "text/plain", "text": "bee"}},
		}})
	default:
		s.reply(m.ID, text(fmt.Sprintf("called %s with %s", p.Name, p.Arguments)))
	}
}
