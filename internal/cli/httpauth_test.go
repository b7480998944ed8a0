package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

func noEnv(string) string { return "" }

// TestHTTPTokenFileIsMadeOnceAndKeptPrivate: without $AIBUDDY_TOKEN a
// 256-bit token is written 0600 to the data folder (made 0700), reused at
// the next start, and processes starting at once agree on one token.
func TestHTTPTokenFileIsMadeOnceAndKeptPrivate(t *testing.T) {
	dd := filepath.Join(t.TempDir(), "data")
	tok, from, err := httpToken(dd, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dd, HTTPTokenFile); from != want {
		t.Errorf("from %q, want %q", from, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("token %q is not 64 hex digits (256 bits)", tok)
	}
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(dd); di.Mode().Perm() != 0o700 {
		t.Errorf("data folder made with mode %04o, want 0700", di.Mode().Perm())
	}
	again, _, err := httpToken(dd, noEnv)
	if err != nil || again != tok {
		t.Errorf("second start: %q, %v; want the same token", again, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dd, ".http-token-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	fresh := filepath.Join(t.TempDir(), "data")
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Go(func() {
			tok, _, err := httpToken(fresh, noEnv)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	for _, tk := range toks {
		if tk != toks[0] {
			t.Fatalf("concurrent starts made different tokens: %v", toks)
		}
	}
}

// TestHTTPTokenFileOthersCouldReadIsRefused: a token file with any group
// or other permission, a link, a folder or a FIFO in its place (opened
// without blocking), one with a short token, and one owned by another
// user are refused at the Authorization stage, saying what to do.
func TestHTTPTokenFileOthersCouldReadIsRefused(t *testing.T) {
	good := strings.Repeat("ab", 32) + "\n"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602} {
		dd := t.TempDir()
		p := filepath.Join(dd, HTTPTokenFile)
		os.WriteFile(p, []byte(good), 0o600)
		os.Chmod(p, mode)
		_, _, err := httpToken(dd, noEnv)
		if err == nil || !strings.Contains(err.Error(), "Authorization error") || !strings.Contains(err.Error(), "chmod 600") ||
			!strings.Contains(err.Error(), "refusing to serve") {
			t.Errorf("mode %04o: %v, want a refusal naming chmod 600", mode, err)
		}
	}
	cases := map[string]func(p string) error{
		"symbolic link": func(p string) error {
			target := filepath.Join(filepath.Dir(p), "elsewhere")
			os.WriteFile(target, []byte(good), 0o600)
			return os.Symlink(target, p)
		},
		"not a regular file": func(p string) error { return os.Mkdir(p, 0o700) },
		"FIFO":               func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"shorter than":       func(p string) error { return os.WriteFile(p, []byte("short\n"), 0o600) },
		"cannot carry":       func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("a b", 20)), 0o600) },
	}
	for name, setup := range cases {
		dd := t.TempDir()
		if err := setup(filepath.Join(dd, HTTPTokenFile)); err != nil {
			t.Fatal(err)
		}
		_, _, err := httpToken(dd, noEnv)
		want := name
		if name == "FIFO" {
			want = "not a regular file"
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "next:") {
			t.Errorf("%s: %v, want a refusal saying %q and what to do", name, err, want)
		}
	}
	t.Run("another user's file", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("making a file another user owns needs root")
		}
		dd := t.TempDir()
		p := filepath.Join(dd, HTTPTokenFile)
		os.WriteFile(p, []byte(good), 0o600)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, _, err := httpToken(dd, noEnv)
		if err == nil || !strings.Contains(err.Error(), "belongs to user id 65534") {
			t.Errorf("another user's token file: %v, want a refusal", err)
		}
	})
}

// TestHTTPTokenFromEnvironment: $AIBUDDY_TOKEN wins over the file (none
// is made); a short one, or one a header cannot carry, is refused.
func TestHTTPTokenFromEnvironment(t *testing.T) {
	dd := t.TempDir()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == TokenEnv {
				return v
			}
			return ""
		}
	}
	tok, from, err := httpToken(dd, env(testToken))
	if err != nil || tok != testToken || from != "$"+TokenEnv {
		t.Errorf("got %q from %q, %v", tok, from, err)
	}
	if _, err := os.Stat(filepath.Join(dd, HTTPTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was made although $%s is set: %v", TokenEnv, err)
	}
	for _, bad := range []string{"hunter2", strings.Repeat("x", 31), strings.Repeat("ab", 16) + " ", strings.Repeat("é", 20)} {
		if _, _, err := httpToken(dd, env(bad)); err == nil || !strings.Contains(err.Error(), "$"+TokenEnv) {
			t.Errorf("$%s=%q: %v, want a refusal", TokenEnv, bad, err)
		}
	}
}

// TestStaticTokenVerifier accepts exactly the token.
func TestStaticTokenVerifier(t *testing.T) {
	v := staticToken(testToken)
	if _, err := v(context.Background(), testToken, nil); err != nil {
		t.Errorf("the token: %v", err)
	}
	for _, bad := range []string{"", testToken[:63], testToken + "0", strings.ToUpper(testToken)} {
		if _, err := v(context.Background(), bad, nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%q: %v, want ErrInvalidToken", bad, err)
		}
	}
}
