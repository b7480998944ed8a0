package mcpclient_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/tool"
)

// TestBH098LongAndSanitizedNamesStayApart is case BH-098 (kind 17): a
// server with a long name offers two long tools that differ only in the
// middle, and read-file beside read_file. Every visible name fits the
// provider rule (64 characters of [A-Za-z0-9_-]), none replaces another,
// the names are the same on a second start, each maps back to its own
// (server, tool) and a call by each visible name reaches that tool.
func TestBH098LongAndSanitizedNamesStayApart(t *testing.T) {
	const server = "acme-knowledge-base-connector-production"
	orig := []string{"createKnowledgeArticleWithAttachmentsAndReviewers", "deleteKnowledgeArticleWithAttachmentsAndReviewers", "read-file", "read_file"}
	list := `[{"name":"createKnowledgeArticleWithAttachmentsAndReviewers","inputSchema":{"type":"object"}},` +
		`{"name":"deleteKnowledgeArticleWithAttachmentsAndReviewers","inputSchema":{"type":"object"}},` +
		`{"name":"read-file","inputSchema":{"type":"object"}},{"name":"read_file","inputSchema":{"type":"object"}}]`
	names := func() []string {
		m := connect(t, nil, scriptedServer(server, "scripted", list))
		var out []string
		for _, tl := range m.Tools()[server] {
			out = append(out, tl.Name())
		}
		if len(out) != 4 {
			t.Fatalf("%d tools loaded, want 4: %v (servers %+v)", len(out), out, m.Servers())
		}
		valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
		byOrig := map[string]string{}
		for _, n := range out {
			if !valid.MatchString(n) {
				t.Errorf("visible name %q breaks ^[a-zA-Z0-9_-]{1,64}$", n)
			}
			o, ok := m.Route(n)
			if !ok || o.Server != server {
				t.Fatalf("Route(%q) = %+v %v", n, o, ok)
			}
			byOrig[o.Tool] = n
			res := m.Call(context.Background(), &tool.Call{ID: "c", Name: n, Input: []byte(`{}`)})
			if want := "called " + o.Tool + " with {}"; res.IsError || res.AllText() != want {
				t.Errorf("call of %q: %q, want %q", n, res.AllText(), want)
			}
		}
		for _, o := range orig {
			if byOrig[o] == "" {
				t.Errorf("no visible name maps back to %q: %v", o, byOrig)
			}
		}
		if byOrig["read_file"] != mcpclient.ToolName(server, "read_file") {
			t.Errorf("read_file, which fits as it is, is %q", byOrig["read_file"])
		}
		slices.Sort(out)
		return out
	}
	first, second := names(), names()
	if !slices.Equal(first, second) {
		t.Errorf("names changed across starts: %v, then %v", first, second)
	}
}
