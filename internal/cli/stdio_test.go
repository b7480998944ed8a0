package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decodeMessage decodes a request as the SDK's jsonrpc.DecodeMessage does
// (same message, or an error for the same frames), from one decoding.
func TestStdioDecodeMessageAsSDK(t *testing.T) {
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","arguments":{"path":"."}}}`,
		`{"jsonrpc":"2.0","id":"a-string","method":"ping"}`,
		`{"jsonrpc":"2.0","id":7.0,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":3,"method":""}`,
		`{"jsonrpc":"2.0","id":3,"method":null}`,
		`{"method":"ping","id":4,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":5,"result":{"x":1}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no"}}`,
		// Refused by both.
		`{"jsonrpc":"1.0","id":7,"method":"ping"}`,
		`{"id":8,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9,"method":5}`,
		`{"jsonrpc":2.0,"id":9,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`[1,2]`,
		`42`,
	}
	for _, f := range frames {
		want, werr := jsonrpc.DecodeMessage([]byte(f))
		got, gerr := decodeMessage([]byte(f))
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, the SDK's %v", f, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %#v\n want %#v", f, got, want)
		}
	}
}

// encodeMessage writes the bytes jsonrpc.EncodeMessage writes.
func TestStdioEncodeMessageAsSDK(t *testing.T) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"a <b> & c \u2028"}],"isError":false}`)
	var msgs []jsonrpc.Message
	for _, id := range []any{float64(1), float64(-40), "s", `<&> "quoted" ` + "\u2028", ""} {
		jid, err := jsonrpc.MakeID(id)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, &jsonrpc.Response{ID: jid, Result: result},
			&jsonrpc.Response{ID: jid, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
			&jsonrpc.Request{ID: jid, Method: "sampling/createMessage", Params: json.RawMessage(`{"a":1}`)})
	}
	msgs = append(msgs, &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"p":1}`)})
	for _, m := range msgs {
		want, werr := jsonrpc.EncodeMessage(m)
		got, gerr := encodeMessage(m)
		if werr != nil || gerr != nil {
			t.Fatalf("%#v: %v / %v", m, gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got  %s\n want %s", m, got, want)
		}
	}
}

// stdioSession serves an empty MCP server over guardedStdio and returns
// the host's ends: its writes to the server and a reader of the lines
// the server writes.
func stdioSession(t *testing.T) (io.Writer, *bufio.Scanner) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, guardedStdio(inR, outW, stdioOptions{})) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			t.Log("server:", err)
		}
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return inW, sc
}

func initialize(t *testing.T, in io.Writer, sc *bufio.Scanner, version string) {
	t.Helper()
	send(t, in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	line := next(t, sc)
	if !strings.Contains(line, `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize answer %s, want version %s", line, version)
	}
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func send(t *testing.T, in io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("no line from the server: %v", sc.Err())
	}
	return sc.Text()
}

// Before protocol 2025-06-18 a batch is taken, as by the SDK's transport:
// its calls are answered in one array, in the batch's order.
func TestStdioBatchAnsweredInOneArray(t *testing.T) {
	in, sc := stdioSession(t)
	initialize(t, in, sc, "2025-03-26")
	send(t, in, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":"three","method":"tools/list"}]`)
	var got []struct {
		ID     json.RawMessage
		Result json.RawMessage
		Error  json.RawMessage
	}
	line := next(t, sc)
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("answer to the batch is not an array: %s", line)
	}
	if len(got) != 2 || string(got[0].ID) != "2" || string(got[1].ID) != `"three"` || got[0].Error != nil {
		t.Fatalf("answer to the batch: %s", line)
	}
}

// A session that negotiated 2025-06-18 (no batches) gets -32600 for a
// batch, which is skipped; the session goes on (the SDK's transport ends
// it).
func TestStdioBatchRefusedAfter20250618(t *testing.T) {
	in, sc := stdioSession(t)
	initialize(t, in, sc, "2025-06-18")
	send(t, in, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var e struct {
		ID    json.RawMessage
		Error struct{ Code int }
	}
	line := next(t, sc)
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.Error.Code != codeInvalidRequest || !strings.Contains(line, "batches") {
		t.Fatalf("answer to a batch: %s, want a -32600 naming batches", line)
	}
	send(t, in, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if line := next(t, sc); line != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Fatalf("ping after the refused batch: %s", line)
	}
}
