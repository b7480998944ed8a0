package e2bsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Defaults of APIOptions (settings sandbox.e2b.*).
const (
	DefaultAPIURL          = "https://api.e2b.dev"                 // APIOptions.APIURL
	DefaultTemplate        = "base"                                // APIOptions.Template
	DefaultSandboxTimeout  = 5 * time.Minute                       // APIOptions.Timeout
	DefaultDomain          = "e2b.app"                             // APIOptions.Domain
	DefaultEnvdURLTemplate = "https://{port}-{sandboxID}.{domain}" // APIOptions.EnvdURLTemplate
	DefaultEnvdPort        = "49983"                               // envd's port in an E2B sandbox
)

// APIOptions configures NewAPI: the E2B control-plane API (its public
// spec: github.com/e2b-dev/infra, spec/openapi.yml).
type APIOptions struct {
	// APIKey is sent as X-API-Key (E2B_API_KEY).
	APIKey string
	// APIURL is the API's base URL; default DefaultAPIURL (setting
	// sandbox.e2b.apiURL, for self-hosted control planes).
	APIURL string
	// Template is NewSandbox.templateID; default "base" (setting
	// sandbox.e2b.template).
	Template string
	// Timeout is the sandbox's time to live (NewSandbox.timeout and each
	// POST /sandboxes/{id}/timeout, in whole seconds), refreshed every
	// Timeout/3 while the adapter is open; default 5 min (setting
	// sandbox.e2b.timeout).
	Timeout time.Duration
	// Domain is used when the API's answer names none; default "e2b.app".
	Domain string
	// EnvdURLTemplate makes envd's URL from {port}, {sandboxID} and
	// {domain}; default DefaultEnvdURLTemplate (setting
	// sandbox.e2b.envdURLTemplate).
	EnvdURLTemplate string
	// Metadata is NewSandbox.metadata; default {"createdBy": "aibuddy"}.
	Metadata map[string]string
}

// newSandboxBody is the spec's NewSandbox (the fields used).
type newSandboxBody struct {
	TemplateID string            `json:"templateID"`
	Timeout    int32             `json:"timeout"`
	Secure     bool              `json:"secure"` // envd then requires envdAccessToken
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// createdSandbox is the spec's Sandbox (the fields used).
type createdSandbox struct {
	SandboxID       string  `json:"sandboxID"`
	TemplateID      string  `json:"templateID"`
	EnvdVersion     string  `json:"envdVersion"`
	EnvdAccessToken string  `json:"envdAccessToken"`
	Domain          *string `json:"domain"`
}

// apiError is the spec's Error.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type apiClient struct {
	hc   *http.Client
	base string
	key  string
}

func (c *apiClient) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("E2B API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var e apiError
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(b))
		}
		hint := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = ": Authorization: check E2B_API_KEY"
		case http.StatusNotFound:
			hint = ": check sandbox.e2b.template (and sandbox.e2b.apiURL)"
		}
		return fmt.Errorf("E2B API %s %s answered %s: %s%s", method, path, resp.Status, e.Message, hint)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("E2B API %s %s: Verification: the answer is not the spec's shape: %w", method, path, err)
		}
	}
	return nil
}

// NewAPI creates a secured sandbox (NewSandbox.secure: envd then requires
// the answer's envdAccessToken) from api.Template through the E2B API (POST
// /sandboxes), opens the adapter on its envd (opts.EnvdURL is made from
// api.EnvdURLTemplate when empty; opts.AccessToken is the answer's
// envdAccessToken), keeps the sandbox alive with POST
// /sandboxes/{id}/timeout every Timeout/3 while open, and kills it (DELETE
// /sandboxes/{id}) at Close, or at once when opening fails.
func NewAPI(ctx context.Context, api APIOptions, opts Options) (*Sandbox, error) {
	if api.APIKey == "" {
		return nil, errors.New("e2bsandbox: Authorization: no E2B API key: set E2B_API_KEY, or sandbox.e2b.envdURL for an existing sandbox")
	}
	if api.APIURL == "" {
		api.APIURL = DefaultAPIURL
	}
	if api.Template == "" {
		api.Template = DefaultTemplate
	}
	setDur(&api.Timeout, DefaultSandboxTimeout)
	if api.Domain == "" {
		api.Domain = DefaultDomain
	}
	if api.EnvdURLTemplate == "" {
		api.EnvdURLTemplate = DefaultEnvdURLTemplate
	}
	if api.Metadata == nil {
		api.Metadata = map[string]string{"createdBy": "aibuddy"}
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := &apiClient{hc: hc, base: strings.TrimRight(api.APIURL, "/"), key: api.APIKey}
	secs := int32(max(api.Timeout/time.Second, 1))
	var sb createdSandbox
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := c.do(cctx, http.MethodPost, "/sandboxes", newSandboxBody{TemplateID: api.Template, Timeout: secs, Secure: true, Metadata: api.Metadata}, http.StatusCreated, &sb)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("e2bsandbox: Discovery: creating a sandbox from template %q: %w", api.Template, err)
	}
	if sb.SandboxID == "" {
		return nil, errors.New("e2bsandbox: Discovery: the E2B API created a sandbox without a sandboxID")
	}
	kill := func() error {
		kctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.do(kctx, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, http.StatusNoContent, nil); err != nil {
			return fmt.Errorf("e2bsandbox: killing sandbox %s: %w (it ends by itself after sandbox.e2b.timeout)", sb.SandboxID, err)
		}
		return nil
	}
	domain := api.Domain
	if sb.Domain != nil && *sb.Domain != "" {
		domain = *sb.Domain
	}
	if opts.EnvdURL == "" {
		opts.EnvdURL = strings.NewReplacer("{port}", DefaultEnvdPort, "{sandboxID}", sb.SandboxID, "{domain}", domain).Replace(api.EnvdURLTemplate)
	}
	if sb.EnvdAccessToken != "" {
		opts.AccessToken = sb.EnvdAccessToken
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	opts.OnClose = func() error {
		close(stop)
		wg.Wait()
		return kill()
	}
	s, err := New(ctx, opts)
	if err != nil {
		if kerr := kill(); kerr != nil {
			err = errors.Join(err, kerr)
		}
		return nil, err
	}
	s.sandboxID = sb.SandboxID
	wg.Add(1)
	go func() { // keep the sandbox alive while the adapter is open
		defer wg.Done()
		t := time.NewTicker(max(api.Timeout/3, time.Second))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_ = c.do(rctx, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/timeout", map[string]int32{"timeout": secs}, http.StatusNoContent, nil)
				cancel()
			}
		}
	}()
	return s, nil
}

// SandboxID is the E2B sandbox id when NewAPI created it, else "".
func (s *Sandbox) SandboxID() string { return s.sandboxID }
