// Command client is the MCP client the official conformance suite tests
// (`conformance client --command BINARY --scenario NAME`): it connects to
// the scenario's server (the URL is its one argument; the scenario name
// is $MCP_CONFORMANCE_SCENARIO, its data $MCP_CONFORMANCE_CONTEXT) through
// aibuddy's own MCP client, mcpclient.Manager, with OAuth as `aibuddy mcp
// login` runs it, so the suite tests our code, not the SDK's alone. It
// exits 0 when the scenario's calls succeeded, else 1 with the reason on
// stderr.
//
// Per scenario: every one connects (initialize, tools/list); tools_call
// calls add_numbers {"a":5,"b":3}; elicitation-sep1034-client-defaults
// calls test_client_elicitation_defaults; sse-retry calls
// test_reconnection; auth/* call test-tool after the authorization flow,
// whose browser step follows the authorization server's redirect without a
// browser (the suite's server approves at once). Grants go to a temporary
// token store removed at exit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// server is the name the scenario's server gets in our configuration.
const server = "conformance"

// cimdURL is the client ID metadata document URL the suite's basic-cimd
// scenario expects (an https URL it does not fetch).
const cimdURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is registered and sent; the suite's authorization server
// redirects to it and the headless browser step reads the redirect
// instead of following it.
const redirectURL = "http://localhost:3000/callback"

// scenarioCall names the tool a scenario calls after connecting, and its
// arguments; ok is false for a scenario that only connects.
func scenarioCall(scenario string) (toolName, args string, ok bool) {
	switch {
	case scenario == "tools_call":
		return "add_numbers", `{"a":5,"b":3}`, true
	case scenario == "elicitation-sep1034-client-defaults":
		return "test_client_elicitation_defaults", `{}`, true
	case scenario == "sse-retry":
		return "test_reconnection", `{}`, true
	case strings.HasPrefix(scenario, "auth/"):
		return "test-tool", `{}`, true
	}
	return "", "", false
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: client SERVER_URL (with $MCP_CONFORMANCE_SCENARIO set)")
	}
	serverURL, scenario := os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &sctx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	// The server's entry as a user would write it in mcpServers.
	oauth := map[string]any{"clientMetadataUrl": cimdURL}
	if sctx.ClientID != "" {
		oauth["clientId"], oauth["clientSecret"] = sctx.ClientID, sctx.ClientSecret
	}
	entry, _ := json.Marshal(map[string]any{"url": serverURL, "oauth": oauth})
	servers, err := mcpclient.ParseServers(map[string]json.RawMessage{server: entry})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aibuddy-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	m := mcpclient.Connect(ctx, servers, &mcpclient.Options{InitTimeout: 20 * time.Second, ClientName: "aibuddy-conformance", ClientVersion: "1",
		Elicit: acceptDefaults,
		OAuth: &mcpclient.OAuthOptions{Store: mcpclient.NewTokenStore(dir),
			Interactive: &mcpclient.Interaction{RedirectURL: redirectURL, Fetch: headlessBrowser}}})
	defer m.Close()
	st := m.Servers()[0]
	if st.State != mcpclient.StateConnected {
		return fmt.Errorf("scenario %s: server %s", scenario, st.Summary())
	}
	toolName, args, ok := scenarioCall(scenario)
	if !ok {
		return nil
	}
	name, found := m.Name(server, toolName)
	if !found {
		return fmt.Errorf("scenario %s: the server lists no tool %s (%s)", scenario, toolName, st.Summary())
	}
	res := m.Call(ctx, &tool.Call{ID: "conformance-1", Name: name, Input: json.RawMessage(args)})
	if res.IsError {
		return fmt.Errorf("scenario %s: %s failed at the %s stage: %s", scenario, toolName, res.Stage, res.AllText())
	}
	return nil
}

// acceptDefaults is the user of this client: it accepts every form and
// fills in nothing, so the values that reach the server are the schema's
// defaults, applied by the MCP client as SEP-1034 says
// (elicitation-sep1034-client-defaults checks them).
func acceptDefaults(context.Context, mcpclient.Elicitation) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}

// headlessBrowser is the browser step: it requests the authorization URL
// and reads the code, state and iss from the redirect the suite's
// authorization server answers with at once.
func headlessBrowser(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return nil, fmt.Errorf("the authorization endpoint answered %s without a redirect", resp.Status)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
