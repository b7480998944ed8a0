package e2bsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"connectrpc.com/connect"

	fspb "github.com/aibuddy/aibuddy/internal/envdspec/filesystem"
	"github.com/aibuddy/aibuddy/sandbox"
)

// filesURL is envd's /files endpoint for an absolute sandbox path.
func (s *Sandbox) filesURL(p string) string {
	q := url.Values{"path": {p}, "username": {s.opts.User}}
	return s.base + "/files?" + q.Encode()
}

// envdHTTPError is envd's JSON error body {"message","code"}.
type envdHTTPError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func (s *Sandbox) httpErr(op sandbox.Op, what string, resp *http.Response) error {
	var e envdHTTPError
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = string(bytes.TrimSpace(body))
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("envd %s: %s: %w", what, e.Message, sandbox.ErrNotFound)
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("envd %s: Authorization: %s (%s): check sandbox.e2b.accessToken and sandbox.e2b.user", what, e.Message, resp.Status)
	case http.StatusInsufficientStorage:
		return fmt.Errorf("envd %s: Execution: the sandbox is out of disk space: %s", what, e.Message)
	}
	return fmt.Errorf("envd %s: Execution: %s: %s", what, resp.Status, e.Message)
}

// download fetches at most limit bytes of the file at an absolute sandbox
// path (GET /files), the request under ctx.
func (s *Sandbox) download(ctx context.Context, op sandbox.Op, p string, limit int64) ([]byte, error) {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.filesURL(p), nil)
	if err != nil {
		return nil, err
	}
	s.authHTTP(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("envd GET /files: Execution: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, s.httpErr(op, "GET /files", resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, fmt.Errorf("envd GET /files: Execution: reading the body: %w", err)
	}
	return b, nil
}

// upload writes data to an absolute sandbox path (POST /files with an
// application/octet-stream body; envd creates missing parents).
func (s *Sandbox) upload(ctx context.Context, p string, data []byte) error {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.filesURL(p), bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	s.authHTTP(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("envd POST /files: Execution: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s.httpErr(sandbox.OpWrite, "POST /files", resp)
	}
	var entries []struct {
		Path string `json:"path"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil || len(entries) == 0 {
		return fmt.Errorf("envd POST /files: Verification: the answer is not the spec's array of EntryInfo (%v)", err)
	}
	return nil
}

func (s *Sandbox) authHTTP(req *http.Request) {
	if s.opts.AccessToken != "" {
		req.Header.Set("X-Access-Token", s.opts.AccessToken)
	}
}

func (s *Sandbox) move(ctx context.Context, src, dst string) error {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	_, err := s.fs.Move(ctx, connect.NewRequest(&fspb.MoveRequest{Source: src, Destination: dst}))
	if err != nil {
		return s.rpcErr("Filesystem.Move", err)
	}
	return nil
}

func (s *Sandbox) remove(ctx context.Context, p string) {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	_, _ = s.fs.Remove(ctx, connect.NewRequest(&fspb.RemoveRequest{Path: p}))
}

func (s *Sandbox) listDir(ctx context.Context, p string, depth int) ([]*fspb.EntryInfo, error) {
	ctx, cancel := s.unaryCtx(ctx)
	defer cancel()
	resp, err := s.fs.ListDir(ctx, connect.NewRequest(&fspb.ListDirRequest{Path: p, Depth: uint32(depth)}))
	if err != nil {
		return nil, s.rpcErr("Filesystem.ListDir", err)
	}
	return resp.Msg.GetEntries(), nil
}
