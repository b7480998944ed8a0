package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ToolCountsFile is the file, in the data folder, that keeps the number of
// tools each MCP server brought the last time it connected: what the count
// gates expect of a server that has not answered yet (issue 13, "Gates on
// what is configured, not on who answered first").
const ToolCountsFile = "mcp-tool-counts.json"

// toolCountsDoc is the file's shape: {"version": 1, "servers": {"name": 12}}.
type toolCountsDoc struct {
	Version int            `json:"version"`
	Servers map[string]int `json:"servers"`
}

// ReadToolCounts reads the last known tool count per server from path (a
// [ToolCountsFile]). A missing file is an empty map and no error; a file
// that cannot be read or parsed is an empty map and an error saying so
// (the counts are a hint: the caller logs it and goes on with assumed
// counts).
func ReadToolCounts(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return map[string]int{}, fmt.Errorf("reading the last known MCP tool counts: %w", err)
	}
	var doc toolCountsDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Version != 1 {
		return map[string]int{}, fmt.Errorf("the last known MCP tool counts in %s are not a version-1 document (remove the file; it is rebuilt as servers connect)", path)
	}
	out := make(map[string]int, len(doc.Servers))
	for k, v := range doc.Servers {
		if v >= 0 {
			out[k] = v
		}
	}
	return out, nil
}

// WriteToolCounts replaces path with counts (mode 0600, through a
// temporary file in the same folder and a rename, so a reader never sees
// half a file and two writers leave one of their versions whole).
func WriteToolCounts(path string, counts map[string]int) error {
	b, err := json.MarshalIndent(toolCountsDoc{Version: 1, Servers: counts}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mcp-tool-counts-*")
	if err != nil {
		return fmt.Errorf("writing the last known MCP tool counts: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the last known MCP tool counts: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the last known MCP tool counts: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the last known MCP tool counts: %w", err)
	}
	return nil
}

// Expected says, for every enabled server that is still connecting, how
// many tools it is expected to bring: last[name] when the server's count
// is known from an earlier connection, else assume (negative counts as 0).
// Servers that connected, failed, disconnected or are disabled are not in
// it: a connected server's real count is in Tools, and one that failed
// brings none until it connects. The map is empty once every server has
// answered.
func (m *Manager) Expected(last map[string]int, assume int) map[string]int {
	if assume < 0 {
		assume = 0
	}
	out := map[string]int{}
	for _, st := range m.Servers() {
		if st.State != StateConnecting {
			continue
		}
		if n, ok := last[st.Name]; ok {
			out[st.Name] = n
			continue
		}
		out[st.Name] = assume
	}
	return out
}

// Counts returns the number of usable tools of every connected server,
// by name: what [WriteToolCounts] keeps for the next start.
func (m *Manager) Counts() map[string]int {
	out := map[string]int{}
	for _, st := range m.Servers() {
		if st.State == StateConnected {
			out[st.Name] = st.ToolsLoaded
		}
	}
	return out
}

// MergeCounts returns last updated with now (each server in now takes its
// new count; the others keep theirs), and whether anything changed.
func MergeCounts(last, now map[string]int) (map[string]int, bool) {
	out := make(map[string]int, len(last)+len(now))
	for k, v := range last {
		out[k] = v
	}
	changed := false
	for k, v := range now {
		if old, ok := out[k]; !ok || old != v {
			changed = true
		}
		out[k] = v
	}
	return out, changed
}
