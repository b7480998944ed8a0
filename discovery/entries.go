package discovery

import "github.com/aibuddy/aibuddy/capability"

// EntriesOf lists an effective tool set for a Catalog: built-in tools with
// no server (core: always direct), MCP tools with their server (subject to
// the count gates).
func EntriesOf(set *capability.Set) []Entry {
	var out []Entry
	for _, t := range set.Tools() {
		srv, _ := set.Server(t.Name())
		out = append(out, Entry{Tool: t, Server: srv})
	}
	return out
}
