package coretools

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// fsDeniedByMatch is fsDenied as it was first written: path.Match against
// the whole cleaned path and every component. fsDenied must give exactly
// its answers (it is called once per walk entry, so it compares the usual
// pattern shapes directly instead).
func fsDeniedByMatch(patterns []string, p string) (string, bool) {
	if len(patterns) == 0 || p == "" {
		return "", false
	}
	clean := path.Clean(filepath.ToSlash(p))
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, clean); ok {
			return pat, true
		}
		for _, c := range strings.Split(strings.TrimPrefix(clean, "/"), "/") {
			if ok, _ := path.Match(pat, c); ok {
				return pat, true
			}
		}
	}
	return "", false
}

func TestFsDeniedMatchesPathMatch(t *testing.T) {
	pats := []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "secrets/*", "secrets", "*", "a*", "*b",
		"[", "x[ab]y", `\*.txt`, "*.*", "?", "?.go", "**", "dir/*.go", "*/x", ".*", "*.", "*/", "/", "", "a/b"}
	paths := []string{".env", ".env.local", "a/.env", "a/.env.x/y", "key.pem", "a/b/key.pem", "x.pem.bak", ".pem",
		"secrets", "secrets/x", "secrets/x/y", "a/secrets/x", "id_rsa", "id_rsa.pub", "/abs/.env", "./a/../.env",
		"ab", "a", "b", "cab", "a/b", "xay", "xby", "*.txt", "a.txt", "dir/x.go", "dir/y/x.go", "x", "y/x",
		".", "..", "../x", "a//b", "a/./b", "/", "ä.pem", "日本/.env"}
	for _, pat := range pats {
		for _, p := range paths {
			for _, set := range [][]string{{pat}, {"zzz", pat}} {
				r1, ok1 := fsDenied(set, p)
				r2, ok2 := fsDeniedByMatch(set, p)
				if r1 != r2 || ok1 != ok2 {
					t.Errorf("fsDenied(%q, %q) = %q %v; path.Match says %q %v", set, p, r1, ok1, r2, ok2)
				}
			}
		}
	}
}

func BenchmarkFsDenied(b *testing.B) {
	pats := []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", ".netrc", ".npmrc", "credentials.json"}
	b.ReportAllocs()
	set := compileDenied(pats)
	for b.Loop() {
		set.match("src/net/http/internal/chunked.go")
	}
}
