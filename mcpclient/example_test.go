package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/aibuddy/aibuddy/internal/fixtures/fxmcp"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// A settings file's "mcpServers" object, connected and used. The server
// here is a shell command that exits at once, so the example runs
// anywhere; its status shows the exit status and the stderr tail.
func Example() {
	raw := map[string]json.RawMessage{
		"db": json.RawMessage(`{"command":"sh","args":["-c","echo cannot open db >&2; exit 3"]}`),
	}
	servers, err := mcpclient.ParseServers(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := mcpclient.Connect(context.Background(), servers, &mcpclient.Options{InitTimeout: 5 * time.Second})
	defer m.Close()
	for _, s := range m.Servers() {
		fmt.Println(s.Name, s.Summary())
	}
	r := m.Call(context.Background(), &tool.Call{Name: "db__query", Input: json.RawMessage(`{}`)})
	fmt.Println(r.Stage, r.IsError)
	fmt.Println(mcpclient.ToolName("ops tools", "admin.users.list"))
	// Output:
	// db failed: exited with status 3 during initialize: cannot open db
	// execution true
	// ops_tools__admin_users_list
}

// The supervision policy over streamable HTTP, against fx-http in this
// process: the server restarts (its sessions forgotten), a read-only
// tool is retried once on the new session, and an operator's Reconnect
// DELETEs the session before opening the next.
func ExampleManager_Reconnect() {
	fx := fxmcp.NewHTTP(fxmcp.HTTPOptions{})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	defer fx.Close()
	m := mcpclient.Connect(context.Background(),
		[]mcpclient.ServerConfig{{Name: "fx", Type: mcpclient.TypeHTTP, URL: srv.URL + "/mcp"}},
		&mcpclient.Options{InitTimeout: 5 * time.Second})
	defer m.Close()
	alpha := func() string {
		return m.Call(context.Background(), &tool.Call{Name: "fx__alpha", Input: json.RawMessage(`{}`)}).AllText()
	}
	fmt.Println(alpha())
	fx.Restart()
	fmt.Println(alpha())
	if err := m.Reconnect(context.Background(), "fx"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Servers()[0].State, len(fx.State().Deletes), "DELETE")
	// Output:
	// alpha from generation 1
	// alpha from generation 2
	// connected 1 DELETE
}
