package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// MaxNameLen is the longest provider-facing tool name: the intersection of
// Anthropic's ^[a-zA-Z0-9_-]{1,128}$ and OpenAI's ^[a-zA-Z0-9_-]{1,64}$.
const MaxNameLen = 64

// Separator joins the server namespace and the tool name.
const Separator = "__"

// ErrNameCollision is wrapped by every *CollisionError: two MCP tools would
// get the same provider-facing name even after disambiguation. The later
// one (in server, tool order) is quarantined; nothing is overwritten.
var ErrNameCollision = errors.New("mcp tool name collision")

// CollisionError names the two original tools that would share Name.
// First keeps the name; Second is quarantined.
type CollisionError struct {
	Name   string // the provider-facing name both would get
	First  Origin // the tool that keeps the name (earlier in server, tool order)
	Second Origin // the tool that is quarantined
}

// Origin is a tool as its MCP server names it.
type Origin struct {
	Server string // the server's name in the configuration
	Tool   string // the tool's name in the server's tools/list
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("tool name %q would be shared by server %q tool %q and server %q tool %q",
		e.Name, e.First.Server, e.First.Tool, e.Second.Server, e.Second.Tool)
}

// Unwrap returns ErrNameCollision.
func (e *CollisionError) Unwrap() error { return ErrNameCollision }

// ToolName is the deterministic provider-safe name of tool on server:
// sanitize(server) + "__" + sanitize(tool), where sanitize replaces every
// character outside [A-Za-z0-9_-] with '_' (case BH-039: "ops tools" offering
// "admin.users.list" gives "ops_tools__admin_users_list"). A result longer
// than 64 characters is cut to 55 and ends in "_" plus 8 hex digits of the
// SHA-256 of the original server and tool names, so it stays unique and is
// the same on every start.
//
// The Manager uses ToolName for every tool, except that when two tools
// would get the same name, the ones whose names were changed by sanitizing
// get the hashed form too (see [Manager.Route] for the final mapping).
func ToolName(server, tool string) string {
	n := sanitize(server) + Separator + sanitize(tool)
	if len(n) <= MaxNameLen {
		return n
	}
	return hashedName(server, tool)
}

// hashedName is the always-hashed form: at most 64 characters, ending in
// "_" and 8 hex digits of SHA-256(server NUL tool).
func hashedName(server, tool string) string {
	n := sanitize(server) + Separator + sanitize(tool)
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	h := hex.EncodeToString(sum[:4])
	keep := MaxNameLen - 1 - len(h)
	if len(n) > keep {
		n = n[:keep]
	}
	return n + "_" + h
}

func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// exactness counts the parts of o that sanitizing left unchanged (0 to 2);
// a name over the length limit counts as 0.
func exactness(o Origin) int {
	if len(o.Server)+len(Separator)+len(o.Tool) > MaxNameLen {
		return 0
	}
	n := 0
	if sanitize(o.Server) == o.Server {
		n++
	}
	if sanitize(o.Tool) == o.Tool {
		n++
	}
	return n
}

// assignNames gives every origin its provider-facing name. When ToolName
// maps several origins alike, the one that sanitizing changed least keeps
// the plain name and the others get the hashed form ("a_b" keeps
// "s__a_b"; "a.b" and "a/b" get "s__a_b_<hash>"); when no single one is
// closest, all get the hashed form. Two origins that both need no
// sanitizing ("a"/"b__c" and "a__b"/"c") are a genuine collision: the later
// in (server, tool) order gets a *CollisionError and no name. The result
// depends only on the set of origins, never on their order.
func assignNames(origins []Origin) (map[Origin]string, map[Origin]*CollisionError) {
	sorted := append([]Origin(nil), origins...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Tool < sorted[j].Tool
	})
	groups := map[string][]Origin{}
	for _, o := range sorted {
		n := ToolName(o.Server, o.Tool)
		groups[n] = append(groups[n], o)
	}
	names := make(map[Origin]string, len(sorted))
	for n, group := range groups {
		if len(group) == 1 {
			names[group[0]] = n
			continue
		}
		best, winners := -1, 0
		for _, o := range group {
			switch e := exactness(o); {
			case e > best:
				best, winners = e, 1
			case e == best:
				winners++
			}
		}
		for _, o := range group {
			if exactness(o) == best && (winners == 1 || best == 2) {
				names[o] = n
			} else {
				names[o] = hashedName(o.Server, o.Tool)
			}
		}
	}
	collisions := map[Origin]*CollisionError{}
	owner := map[string]Origin{}
	for _, o := range sorted {
		n := names[o]
		if first, taken := owner[n]; taken {
			collisions[o] = &CollisionError{Name: n, First: first, Second: o}
			delete(names, o)
			continue
		}
		owner[n] = o
	}
	return names, collisions
}
