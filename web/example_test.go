package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/web"
)

// A host mounts the web view beside its MCP endpoint: the hub observes
// the pipeline, the broker takes the confirms a browser decides, and the
// same token as /mcp opens the pages.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example-web-")
	defer os.RemoveAll(dir)
	st, _ := sqlitestore.Open(filepath.Join(dir, "records.db"), nil)
	defer st.Close()

	var hub *web.Hub
	broker := approval.NewBroker(&approval.BrokerOptions{OnChange: func() { hub.ApprovalsChanged() }})
	hub = web.NewHub(&web.HubOptions{Broker: broker})
	_ = pipeline.New(&pipeline.Options{Store: st, Observer: hub,
		Confirmer: approval.ConfirmVia(approval.ViaWeb, nil, broker)})

	check := func(_ context.Context, tok string, _ *http.Request) error {
		if tok != "the-token-of-aibuddy-mcp-print-token" {
			return fmt.Errorf("not the token")
		}
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle(web.Prefix+"/", web.New(&web.Options{Verify: check, Store: st, Hub: hub, Broker: broker}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, _ := noFollow.Get(srv.URL + "/ui/")
	fmt.Println("without a session:", res.StatusCode, res.Header.Get("Location"))
	req, _ := http.NewRequest("POST", srv.URL+"/ui/login", strings.NewReader("token=the-token-of-aibuddy-mcp-print-token"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	res, _ = noFollow.Do(req)
	fmt.Println("login:", res.StatusCode, res.Cookies()[0].Name, res.Cookies()[0].HttpOnly)
	// Output:
	// without a session: 303 /ui/login?next=%2Fui%2F
	// login: 303 aibuddy_ui true
}
