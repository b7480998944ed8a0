package permissions

import "testing"

// The per-component fast path of PathPattern.Match gives exactly the
// answers of the doublestar match over the path and its ancestors.
func TestComponentGlobMatchesDoublestar(t *testing.T) {
	pats := []string{".env", ".env.*", "*.pem", "*.key", "id_rsa", "credentials.json", "*", "a*", "*b", "x[ab]y",
		`\*.txt`, "*.*", "?", "?.go", "*.{pem,key}", ".*", "*.", "secrets", "[!a]*", "{a,b}c"}
	paths := []string{".env", ".env.local", "a/.env", "a/.env.x/y", "key.pem", "a/b/key.pem", "x.pem.bak", ".pem",
		"secrets", "secrets/x", "a/secrets/x", "id_rsa", "id_rsa.pub", "ab", "a", "b", "cab", "a/b", "xay", "xby",
		"*.txt", "a.txt", "dir/x.go", "x.go", "ä.pem", "日本/.env", "a.key/b", "bc", "ac/d", "dc"}
	pc := pathContext{workspace: "/ws", settingsDir: "/ws", home: "/h"}
	for _, pat := range pats {
		fast, err := newLegacyPattern(pat, pc)
		if err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		if fast.any == nil {
			t.Fatalf("%q: no fast path (Glob %q)", pat, fast.Glob)
		}
		slow := fast
		slow.any = nil
		for _, p := range paths {
			abs := absPath("/ws", p)
			if got, want := fast.Match(abs), slow.Match(abs); got != want {
				t.Errorf("%q on %q: fast %v, doublestar %v", pat, p, got, want)
			}
		}
	}
}
