package mcpclient

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Dialects of a host's settings file ([HostFile.Dialect]).
const (
	// DialectMCPServers is the JSON "mcpServers" object of Claude Desktop
	// (claude_desktop_config.json), Claude Code (.mcp.json), Cursor
	// (.cursor/mcp.json), Cline and most hosts: read as ParseServers reads
	// it.
	DialectMCPServers = "mcpServers"
	// DialectGemini is Gemini CLI's settings.json: its "mcpServers"
	// entries also use httpUrl, timeout (milliseconds), trust,
	// includeTools, excludeTools, tcp and OAuth keys, and $VAR as well as
	// ${VAR}.
	DialectGemini = "gemini"
	// DialectCodex is Codex's config.toml: [mcp_servers.NAME] tables.
	DialectCodex = "codex"
)

// HostFile is the MCP servers of one host's own settings file, converted
// to the "mcpServers" form ParseServers reads.
type HostFile struct {
	Path    string
	Dialect string                     // DialectMCPServers, DialectGemini or DialectCodex
	Servers map[string]json.RawMessage // name -> entry, in the mcpServers form
	// Notes name each key that was read but has no effect here, and each
	// server left out, one sentence each (for the user, as warnings).
	Notes []string
}

// geminiOnly are keys only Gemini CLI writes into an mcpServers entry; one
// of them (or the file being .gemini/settings.json) marks a file as
// Gemini's.
var geminiOnly = []string{"httpUrl", "trust", "tcp", "oauth", "authProviderType", "targetAudience", "targetServiceAccount"}

// ReadHostFile reads the MCP servers of a host's settings file: a JSON
// file with an "mcpServers" object (any other key is ignored: a whole
// claude_desktop_config.json or Gemini settings.json works), or a Codex
// config.toml (name ending in .toml) with [mcp_servers.NAME] tables.
//
// Gemini CLI entries (a .gemini/settings.json, or entries using keys only
// Gemini writes) are mapped: httpUrl is a streamable HTTP url; url keeps
// its "type" ("sse" or "http"; without one, streamable HTTP, as Gemini CLI
// tries first); timeout (milliseconds) is the server's callTimeout;
// includeTools and excludeTools filter its tools; $VAR is read like
// ${VAR}. trust, OAuth keys and unknown keys are noted and ignored (the
// settings' approval rules decide confirmations); a server reachable only
// over tcp (websocket) is left out with a note.
//
// Codex entries map command, args, env, env_vars, cwd, url,
// bearer_token_env_var, http_headers, env_http_headers, enabled (false is
// disabled), enabled_tools, disabled_tools and tool_timeout_sec; other
// keys are noted and ignored.
//
// Errors: the file cannot be read, is not JSON / TOML, or has no MCP
// servers object.
func ReadHostFile(path string) (*HostFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		return readCodex(path, b)
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		// Gemini CLI's server lists: mcp.allowed / mcp.excluded, and the
		// older top-level allowMCPServers / excludeMCPServers.
		MCP struct {
			Allowed  []string `json:"allowed"`
			Excluded []string `json:"excluded"`
		} `json:"mcp"`
		AllowMCPServers   []string `json:"allowMCPServers"`
		ExcludeMCPServers []string `json:"excludeMCPServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	if doc.MCPServers == nil {
		return nil, fmt.Errorf(`%s: no "mcpServers" object (the file should look like {"mcpServers": {"name": {"command": ...}}})`, path)
	}
	hf := &HostFile{Path: path, Dialect: DialectMCPServers, Servers: doc.MCPServers}
	allowed := append(doc.MCP.Allowed, doc.AllowMCPServers...)
	excluded := append(doc.MCP.Excluded, doc.ExcludeMCPServers...)
	if isGemini(path, doc.MCPServers) || allowed != nil || excluded != nil {
		hf.Dialect = DialectGemini
		hf.Servers = map[string]json.RawMessage{}
		for _, name := range sortedKeys(doc.MCPServers) {
			entry, notes := fromGemini(name, doc.MCPServers[name])
			hf.Notes = append(hf.Notes, notes...)
			if entry != nil {
				hf.Servers[name] = entry
			}
		}
		// A server the file turns off is not started (Gemini CLI: the
		// excluded list wins over the allowed one).
		for _, name := range sortedKeys(hf.Servers) {
			switch {
			case slices.Contains(excluded, name):
				delete(hf.Servers, name)
				hf.Notes = append(hf.Notes, fmt.Sprintf("server %q (Gemini CLI settings): left out: the file excludes it (mcp.excluded / excludeMCPServers)", name))
			case allowed != nil && !slices.Contains(allowed, name):
				delete(hf.Servers, name)
				hf.Notes = append(hf.Notes, fmt.Sprintf("server %q (Gemini CLI settings): left out: not in the file's allowed list (mcp.allowed / allowMCPServers)", name))
			}
		}
	}
	return hf, nil
}

func isGemini(path string, servers map[string]json.RawMessage) bool {
	abs, _ := filepath.Abs(path)
	if filepath.Base(abs) == "settings.json" && filepath.Base(filepath.Dir(abs)) == ".gemini" {
		return true
	}
	for _, raw := range servers {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			continue
		}
		for _, k := range geminiOnly {
			if _, ok := fields[k]; ok {
				return true
			}
		}
	}
	return false
}

// bareVar is Gemini CLI's $VAR form (not followed by "{").
var bareVar = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// braced rewrites $VAR as ${VAR}, leaving ${...} alone.
func braced(s string) string {
	return bareVar.ReplaceAllString(s, "$${$1}")
}

// fromGemini converts one Gemini CLI entry; nil when the server is left
// out. A malformed entry is passed on as it is, for ParseServers to report.
func fromGemini(name string, raw json.RawMessage) (json.RawMessage, []string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return raw, nil
	}
	note := func(format string, args ...any) string {
		return fmt.Sprintf("server %q (Gemini CLI settings): ", name) + fmt.Sprintf(format, args...)
	}
	var notes []string
	out := map[string]any{}
	str := func(k string) (string, bool) {
		var s string
		if v, ok := fields[k]; ok && json.Unmarshal(v, &s) == nil {
			return braced(s), true
		}
		return "", false
	}
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch k {
		case "command", "cwd", "url", "type":
			if s, ok := str(k); ok {
				out[k] = s
			} else {
				out[k] = v // the wrong JSON type: ParseServers names it
			}
		case "httpUrl":
			// handled below
		case "args":
			var a []string
			if json.Unmarshal(v, &a) != nil {
				out[k] = v
				continue
			}
			for i := range a {
				a[i] = braced(a[i])
			}
			out[k] = a
		case "env", "headers":
			var m map[string]string
			if json.Unmarshal(v, &m) != nil {
				out[k] = v
				continue
			}
			for mk, mv := range m {
				m[mk] = braced(mv)
			}
			out[k] = m
		case "includeTools", "excludeTools":
			out[k] = v
		case "timeout":
			var ms float64
			if json.Unmarshal(v, &ms) != nil || ms < 0 {
				notes = append(notes, note("timeout %s is not a number of milliseconds; ignored", v))
				continue
			}
			out["callTimeout"] = int64(ms)
		case "description", "extension", "extensionName":
			// informational
		case "trust":
			notes = append(notes, note(`"trust" is ignored: aibuddy's approval settings decide which calls are confirmed`))
		case "oauth":
			out[k] = v // the same shape as ours (OAuthConfig); its endpoint keys are ignored
		case "authProviderType", "targetAudience", "targetServiceAccount":
			notes = append(notes, note("%q is ignored: Google credentials are not supported here; aibuddy's OAuth discovers the server's authorization server (\"oauth\"), or pass a token in \"headers\"", k))
		case "tcp":
			// Only a problem when it is the server's only transport.
		default:
			notes = append(notes, note("unknown key %q is ignored", k))
		}
	}
	if hu, ok := str("httpUrl"); ok {
		if _, both := out["url"]; both {
			notes = append(notes, note(`both "httpUrl" and "url" are set; "httpUrl" is used, as Gemini CLI does`))
		}
		out["url"], out["type"] = hu, TypeHTTP
	}
	_, hasCmd := out["command"]
	_, hasURL := out["url"]
	if _, tcp := fields["tcp"]; tcp && !hasCmd && !hasURL {
		return nil, append(notes, note(`left out: its "tcp" (websocket) transport is not supported; give it "command", "url" or "httpUrl"`))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw, notes
	}
	return b, notes
}

// codexServer is one [mcp_servers.NAME] table of Codex's config.toml.
type codexServer struct {
	Command           string            `toml:"command"`
	Args              []string          `toml:"args"`
	Env               map[string]string `toml:"env"`
	EnvVars           []string          `toml:"env_vars"`
	Cwd               string            `toml:"cwd"`
	URL               string            `toml:"url"`
	BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
	HTTPHeaders       map[string]string `toml:"http_headers"`
	EnvHTTPHeaders    map[string]string `toml:"env_http_headers"`
	Enabled           *bool             `toml:"enabled"`
	EnabledTools      []string          `toml:"enabled_tools"`
	DisabledTools     []string          `toml:"disabled_tools"`
	ToolTimeoutSec    *float64          `toml:"tool_timeout_sec"`
}

func readCodex(path string, b []byte) (*HostFile, error) {
	var doc struct {
		MCPServers map[string]toml.Primitive `toml:"mcp_servers"`
	}
	md, err := toml.Decode(string(b), &doc)
	if err != nil {
		return nil, fmt.Errorf("%s: not a TOML file: %v", path, err)
	}
	if doc.MCPServers == nil {
		return nil, fmt.Errorf("%s: no [mcp_servers.NAME] table (Codex's config.toml form: [mcp_servers.docs] command = \"npx\")", path)
	}
	hf := &HostFile{Path: path, Dialect: DialectCodex, Servers: map[string]json.RawMessage{}}
	for _, name := range sortedKeys(doc.MCPServers) {
		var s codexServer
		if err := md.PrimitiveDecode(doc.MCPServers[name], &s); err != nil {
			return nil, fmt.Errorf("%w: server %q (%s): %v", ErrConfig, name, path, err)
		}
		out := map[string]any{}
		if s.Command != "" {
			out["command"] = s.Command
		}
		if len(s.Args) > 0 {
			out["args"] = s.Args
		}
		env := map[string]string{}
		for k, v := range s.Env {
			env[k] = v
		}
		for _, k := range s.EnvVars {
			if _, set := env[k]; !set {
				env[k] = "${" + k + ":-}" // passed through from aibuddy's environment
			}
		}
		if len(env) > 0 {
			out["env"] = env
		}
		if s.Cwd != "" {
			out["cwd"] = s.Cwd
		}
		if s.URL != "" {
			out["url"], out["type"] = s.URL, TypeHTTP
		}
		headers := map[string]string{}
		for k, v := range s.HTTPHeaders {
			headers[k] = v
		}
		for k, v := range s.EnvHTTPHeaders {
			headers[k] = "${" + v + "}"
		}
		if s.BearerTokenEnvVar != "" {
			headers["Authorization"] = "Bearer ${" + s.BearerTokenEnvVar + "}"
		}
		if len(headers) > 0 {
			out["headers"] = headers
		}
		if s.Enabled != nil && !*s.Enabled {
			out["disabled"] = true
		}
		if s.EnabledTools != nil {
			out["includeTools"] = s.EnabledTools
		}
		if len(s.DisabledTools) > 0 {
			out["excludeTools"] = s.DisabledTools
		}
		if s.ToolTimeoutSec != nil && *s.ToolTimeoutSec > 0 {
			out["callTimeout"] = int64(*s.ToolTimeoutSec * 1000)
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		hf.Servers[name] = raw
	}
	// Keys aibuddy has no use for (startup_timeout_sec, required, oauth,
	// tools.<name>...), once per server and key.
	seen := map[string]bool{}
	for _, k := range md.Undecoded() {
		if len(k) >= 3 && k[0] == "mcp_servers" && !seen[k[1]+"\x00"+k[2]] {
			seen[k[1]+"\x00"+k[2]] = true
			hf.Notes = append(hf.Notes, fmt.Sprintf("server %q (Codex config.toml): %q is ignored here", k[1], k[2]))
		}
	}
	sort.Strings(hf.Notes)
	return hf, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
