package mcpclient

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

var safeName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 90)
	for _, tc := range []struct{ server, tool, want string }{
		{"memory", "create_entities", "memory__create_entities"},
		{"ops tools", "admin.users.list", "ops_tools__admin_users_list"},
		{"ops tools", "user/profile-update", "ops_tools__user_profile-update"},
		{"café", "ünï", "caf____n_"},
		{"", "", "____"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	a, b := ToolName("s", long), ToolName("s", long+"y")
	if len(a) != 64 || !safeName.MatchString(a) || a == b || a != ToolName("s", long) {
		t.Errorf("long names: %q, %q", a, b)
	}
}

// BH-039: the mapping depends on the set of tools, never on their order.
func TestAssignNamesDeterministic(t *testing.T) {
	origins := []Origin{
		{"ops tools", "a.b"}, {"ops tools", "a/b"}, {"ops tools", "a_b"},
		{"ops tools", "x y"}, {"ops tools", "x.y"}, // no exact member: both hashed
		{"ops_tools", "a_b"},         // exact in both parts: keeps the plain name
		{"a", "b__c"}, {"a__b", "c"}, // a genuine collision
		{"s", strings.Repeat("n", 80)}, {"s", strings.Repeat("n", 81)},
	}
	first, firstColl := assignNames(origins)
	for i := range 20 {
		shuffled := append([]Origin(nil), origins...)
		rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		names, coll := assignNames(shuffled)
		for o, n := range first {
			if names[o] != n {
				t.Fatalf("order %d: %v -> %q, first run %q", i, o, names[o], n)
			}
		}
		if len(coll) != len(firstColl) {
			t.Fatalf("order %d: collisions %v vs %v", i, coll, firstColl)
		}
	}
	seen := map[string]Origin{}
	for o, n := range first {
		if !safeName.MatchString(n) {
			t.Errorf("%v -> %q is not provider-safe", o, n)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("%v and %v share %q", prev, o, n)
		}
		seen[n] = o
	}
	if got := first[Origin{"ops_tools", "a_b"}]; got != "ops_tools__a_b" {
		t.Errorf("exact a_b -> %q", got)
	}
	if got := first[Origin{"ops tools", "a_b"}]; got == "ops_tools__a_b" {
		t.Errorf("lossy server name took the plain name")
	}
	if got := first[Origin{"ops tools", "x y"}]; !strings.HasPrefix(got, "ops_tools__x_y_") {
		t.Errorf("x y -> %q", got)
	}
	ce := firstColl[Origin{"a__b", "c"}]
	if ce == nil || ce.First != (Origin{"a", "b__c"}) || first[Origin{"a", "b__c"}] != "a__b__c" {
		t.Errorf("collision %+v, names %v", ce, first)
	}
	if _, named := first[Origin{"a__b", "c"}]; named {
		t.Error("the colliding tool got a name anyway")
	}
}

func TestRing(t *testing.T) {
	r := newRing(10)
	r.Write([]byte("line1\nline2\n"))
	r.Write([]byte("line3\n"))
	if got := r.String(); got != "line3\n" {
		t.Errorf("ring = %q", got)
	}
	r.Write([]byte(strings.Repeat("z", 25)))
	if got := r.String(); got != strings.Repeat("z", 10) || r.Total() != 43 {
		t.Errorf("ring = %q, total %d", got, r.Total())
	}
}

func FuzzPrepareSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"type":"string"}`, `{"properties":{"a":{"$ref":"#/definitions/A"}},"$defs":{"A":{}}}`, `null`, `[]`, `{"type":["object","null"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		raw, _, err := prepareSchema(v, intakeOptions{})
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m["type"] != "object" {
			t.Errorf("accepted %s as %s without a top-level object type", s, raw)
		}
	})
}

// FuzzDefuse: defuse never panics, leaves every message the SDK can read
// as it is, and turns one it cannot into one it can (or drops it), naming
// each tool it takes out.
func FuzzDefuse(f *testing.F) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n) }
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object"}}]}}` + "\n")
	f.Add(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"deep","inputSchema":` + deep(1200) + `},{"name":"ok"}],"nextCursor":"x"}}` + "\n")
	f.Add(`{"jsonrpc":"2.0","id":"s","result":{"content":[],"structuredContent":` + deep(1100) + `}}` + "\n")
	f.Add(`{"jsonrpc":"2.0","method":"notifications/message","params":` + deep(1001) + `}` + "\n")
	f.Add(strings.Repeat("[", 1500) + "\n")
	f.Fuzz(func(t *testing.T, line string) {
		var names []string
		out := defuse([]byte(line), 128, func(name, reason string) {
			if !strings.Contains(reason, "mcp.maxSchemaDepth") {
				t.Errorf("reason %q does not name the setting", reason)
			}
			names = append(names, name)
		})
		if jsonDepth([]byte(line), sdkMaxDepth) <= sdkMaxDepth {
			if string(out) != line || names != nil {
				t.Fatalf("a readable message was changed: %q -> %q", line, out)
			}
			return
		}
		if out != nil && string(out) != line && jsonDepth(out, sdkMaxDepth) > sdkMaxDepth {
			t.Fatalf("still too deep after defuse: %.200q", out)
		}
	})
}

func TestDefuseToolsList(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 1200) + `1` + strings.Repeat(`}`, 1200)
	line := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"deep","inputSchema":` + deep + `},{"name":"ok","inputSchema":{"type":"object"}}],"nextCursor":"2"}}` + "\n"
	var got []string
	out := defuse([]byte(line), 128, func(name, reason string) { got = append(got, name+": "+reason) })
	want := `{"id":7,"jsonrpc":"2.0","result":{"nextCursor":"2","tools":[{"name":"ok","inputSchema":{"type":"object"}}]}}` + "\n"
	if string(out) != want {
		t.Errorf("defuse = %s, want %s", out, want)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "deep: input schema rejected: nested deeper than 128 levels") {
		t.Errorf("quarantined %v", got)
	}
}
