package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TokenStore keeps the OAuth grants aibuddy holds for upstream MCP servers
// in one folder (by default the data folder's mcp-oauth/): one JSON file
// per server, named after the server and a hash of its URL (a server whose
// URL changes starts without a grant), mode 0600, written atomically
// (temporary file in the same folder, fsync, rename). Beside each file a
// lock file serializes refreshes across processes (flock(2), exclusive):
// two aibuddy processes sharing the store refresh a grant once, and the
// one that waited reads the rotated token (case BH-066).
//
// A TokenStore has no state of its own beyond its folder; any number of
// values over one folder, in any number of processes, agree.
type TokenStore struct {
	dir string
}

// NewTokenStore returns the store over dir (created, mode 0700, at the
// first write).
func NewTokenStore(dir string) *TokenStore { return &TokenStore{dir: dir} }

// Dir is the store's folder.
func (s *TokenStore) Dir() string { return s.dir }

// Grant is what the store keeps for one server: the client registration
// that obtained the tokens (to refresh them) and the tokens.
type Grant struct {
	Server string `json:"server"` // the mcpServers name
	URL    string `json:"url"`    // the server's endpoint; the grant's resource (RFC 8707)
	// ClientID and ClientSecret are the client registration (configured,
	// dynamic (RFC 7591) or a client ID metadata document URL).
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// TokenURL is the authorization server's token endpoint; AuthStyle how
	// the client authenticates there (golang.org/x/oauth2 AuthStyle: 0
	// auto-detect, 1 in the form, 2 HTTP Basic).
	TokenURL     string    `json:"tokenUrl"`
	AuthStyle    int       `json:"authStyle,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: the server named no lifetime
	Updated      time.Time `json:"updated"`
}

// file is the grant file of a server: the name's safe characters (for a
// person listing the folder) and 12 hex digits of SHA-256(name, URL).
func (s *TokenStore) file(server, url string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + url))
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, server)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	return filepath.Join(s.dir, safe+"-"+hex.EncodeToString(sum[:6])+".json")
}

// Load returns the grant of the server at url, or nil and no error when
// there is none. A file that is not a grant is an error naming it.
func (s *TokenStore) Load(server, url string) (*Grant, error) {
	p := s.file(server, url)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Authorization: reading the OAuth token store %s: %w", p, err)
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("Authorization: the OAuth token store file %s is not a grant (%v): remove it and run `aibuddy mcp login %s`", p, err, server)
	}
	return &g, nil
}

// Save writes g atomically (a reader sees the old grant or the new one,
// never a part), mode 0600.
func (s *TokenStore) Save(g *Grant) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("Authorization: creating the OAuth token store %s: %w", s.dir, err)
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	p := s.file(g.Server, g.URL)
	tmp, err := os.CreateTemp(s.dir, ".grant-*")
	if err != nil {
		return fmt.Errorf("Authorization: writing the OAuth token store %s: %w", s.dir, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(append(b, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("Authorization: writing %s: %w", p, err)
	}
	return nil
}

// Delete removes the server's grant; a missing one is not an error.
func (s *TokenStore) Delete(server, url string) error {
	err := os.Remove(s.file(server, url))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("Authorization: removing the grant of %s: %w", server, err)
	}
	return nil
}

// Lock takes the server's cross-process lock (flock(2) on the grant's lock
// file) and returns its release. It waits for another holder until ctx
// ends (then the error is ctx's).
func (s *TokenStore) Lock(ctx context.Context, server, url string) (unlock func(), err error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("Authorization: creating the OAuth token store %s: %w", s.dir, err)
	}
	p := strings.TrimSuffix(s.file(server, url), ".json") + ".lock"
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("Authorization: opening the lock %s: %w", p, err)
	}
	got := make(chan error, 1)
	go func() { got <- unix.Flock(int(f.Fd()), unix.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("Authorization: locking %s: %w", p, err)
		}
		return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
	case <-ctx.Done():
		go func() { // the lock, once had, is let go at once
			if <-got == nil {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			}
			f.Close()
		}()
		return nil, ctx.Err()
	}
}
