package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/joho/godotenv"
)

// Transport kinds of a [ServerConfig].
const (
	TypeStdio = "stdio" // a local process speaking newline-delimited JSON-RPC on stdin/stdout
	TypeHTTP  = "http"  // MCP streamable HTTP (spec 2025-03-26 and later)
	TypeSSE   = "sse"   // the legacy HTTP+SSE transport (spec 2024-11-05)
)

// ServerConfig is one entry of the Claude Desktop / Claude Code / Cursor
// "mcpServers" format, after parsing and ${VAR} expansion.
//
// A stdio server has Command (and optionally Args, Env, Cwd); a remote
// server has URL (and optionally Headers). Type is always set by
// [ParseServers]: "stdio", "http" (streamable HTTP) or "sse".
type ServerConfig struct {
	Name    string            // the key in "mcpServers"; the tool namespace is derived from it
	Command string            // stdio: the program to run (looked up in PATH)
	Args    []string          // stdio: its arguments
	Env     map[string]string // stdio: added to (and overriding) the host environment
	Cwd     string            // stdio: working directory; empty means ours
	// EnvFile is the dotenv file named by "envFile" (Cursor), after ${VAR}
	// expansion; its variables were read into Env at parse time, with
	// "env" entries taking precedence over the file's.
	EnvFile string
	URL     string // http/sse: the endpoint
	Type    string // "stdio", "http" or "sse"
	// TypeGuessed is set when the entry named no "type" and Type was
	// inferred (http for a url): such a server may fall back to legacy
	// SSE when its POST is answered 405 (BH-067 e).
	TypeGuessed bool
	Headers     map[string]string // http/sse: sent with every request (e.g. Authorization)
	// Disabled servers are listed with state "disabled" and never started
	// (the "disabled": true key Cline and Cursor use).
	Disabled bool
	// IncludeTools, when not nil, names the only tools of the server that
	// are loaded; ExcludeTools names tools that are not (it wins over
	// IncludeTools). Names are the server's own (before namespacing).
	IncludeTools, ExcludeTools []string
	// CallTimeout bounds one tools/call to this server; 0 means the
	// Manager's Options.CallTimeout.
	CallTimeout time.Duration
	// Sandbox is the server's "sandbox" entry: its operating-system
	// confinement (stdio only; Options.Confine resolves it). nil means the
	// run's default for servers.
	Sandbox *Sandbox
	// OAuth is the "oauth" entry of an http server (see OAuthConfig); nil
	// means OAuth with dynamic client registration when the server asks.
	OAuth *OAuthConfig
}

// Sandbox is the "sandbox" entry of a stdio server: {"confinement":
// "workspace-write"|"read-only"|"off", "network": "off"|"limited"|"on",
// "allowedDomains": [...]}.
type Sandbox struct {
	Confinement    string   `json:"confinement,omitempty"`
	Network        string   `json:"network,omitempty"`
	AllowedDomains []string `json:"allowedDomains,omitempty"`
}

// Wants reports whether the server's tool named orig (the server's own
// name) is loaded under IncludeTools and ExcludeTools.
func (sc ServerConfig) Wants(orig string) bool {
	if slices.Contains(sc.ExcludeTools, orig) {
		return false
	}
	return sc.IncludeTools == nil || slices.Contains(sc.IncludeTools, orig)
}

// ErrConfig is wrapped by every error ParseServers returns.
var ErrConfig = errors.New("invalid mcpServers entry")

// ignoredKeys are keys other hosts write into mcpServers entries that have
// no meaning here; they are accepted and ignored so a user's existing file
// parses (Cline: autoApprove, alwaysAllow, timeout; several hosts:
// description).
var ignoredKeys = map[string]bool{
	"autoApprove": true, "alwaysAllow": true, "timeout": true, "description": true,
}

// ParseServers decodes the raw "mcpServers" object (name -> entry, as kept in
// config.Config.MCPServers) strictly, expanding ${VAR} and ${VAR:-default}
// from the host environment in command, args, env values, cwd, url and
// header values (as Claude Code does for .mcp.json). The result is sorted
// by name.
//
// Accepted keys: command, args, env, envFile, cwd, url, type, headers,
// disabled, includeTools and excludeTools (arrays of the server's tool
// names), sandbox (a stdio server's confinement: {"confinement", "network",
// "allowedDomains"}), callTimeout (one tools/call: a Go duration string or a number of
// milliseconds), oauth (an http server's OAuth client settings, see
// OAuthConfig: true, false or {"clientId", "clientSecret", "scopes",
// "callbackPort", "clientMetadataUrl", "enabled"}), plus the ignored host-specific keys autoApprove,
// alwaysAllow, timeout and description. type is "stdio" (default when command is set), "http"
// (default when url is set; "streamable-http" and "streamableHttp" are
// accepted as synonyms) or "sse".
//
// Errors wrap ErrConfig and name the server and the key: an unknown key, a
// value of the wrong JSON type, both or neither of command and url, a type
// that does not fit, an unset variable without a default, an envFile that
// cannot be read or parsed (a relative envFile is relative to the current
// folder).
func ParseServers(raw map[string]json.RawMessage) ([]ServerConfig, error) {
	return ParseServersWith(raw, os.LookupEnv)
}

// ParseServersWith is ParseServers with the environment given as a lookup
// function (os.LookupEnv in ParseServers), for tests and for hosts that
// resolve variables elsewhere.
func ParseServersWith(raw map[string]json.RawMessage, lookup func(string) (string, bool)) ([]ServerConfig, error) {
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]ServerConfig, 0, len(names))
	for _, name := range names {
		sc, err := parseServer(name, raw[name], lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

func parseServer(name string, raw json.RawMessage, lookup func(string) (string, bool)) (ServerConfig, error) {
	fail := func(key, format string, args ...any) (ServerConfig, error) {
		msg := fmt.Sprintf(format, args...)
		if key == "" {
			return ServerConfig{}, fmt.Errorf("%w: server %q: %s", ErrConfig, name, msg)
		}
		return ServerConfig{}, fmt.Errorf("%w: server %q: key %q: %s", ErrConfig, name, key, msg)
	}
	if strings.TrimSpace(name) == "" {
		return fail("", "the server name is empty")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return fail("", "must be a JSON object")
	}
	sc := ServerConfig{Name: name}
	var typ string
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		var err error
		switch k {
		case "command":
			err = decodeStrict(v, &sc.Command)
		case "args":
			err = decodeStrict(v, &sc.Args)
		case "env":
			err = decodeStrict(v, &sc.Env)
		case "cwd":
			err = decodeStrict(v, &sc.Cwd)
		case "envFile":
			err = decodeStrict(v, &sc.EnvFile)
		case "url":
			err = decodeStrict(v, &sc.URL)
		case "type":
			err = decodeStrict(v, &typ)
		case "headers":
			err = decodeStrict(v, &sc.Headers)
		case "disabled":
			err = decodeStrict(v, &sc.Disabled)
		case "includeTools":
			err = decodeStrict(v, &sc.IncludeTools)
			if err == nil && sc.IncludeTools == nil {
				sc.IncludeTools = []string{}
			}
		case "excludeTools":
			err = decodeStrict(v, &sc.ExcludeTools)
		case "callTimeout":
			sc.CallTimeout, err = decodeDuration(v)
		case "oauth":
			sc.OAuth, err = parseOAuth(v)
		case "sandbox":
			sc.Sandbox = &Sandbox{}
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if err = dec.Decode(sc.Sandbox); err != nil {
				err = fmt.Errorf("%v (want {\"confinement\": ..., \"network\": ..., \"allowedDomains\": [...]})", err)
			}
		default:
			if ignoredKeys[k] {
				continue
			}
			return fail(k, "unknown key (known: command, args, env, envFile, cwd, url, type, headers, disabled, includeTools, excludeTools, callTimeout, sandbox, oauth)")
		}
		if err != nil {
			return fail(k, "%v", err)
		}
	}
	// ${VAR} expansion.
	var err error
	expand := func(key, s string) string {
		if err != nil {
			return s
		}
		var out string
		out, err = expandVars(s, lookup)
		if err != nil {
			err = fmt.Errorf("%w: server %q: key %q: %v", ErrConfig, name, key, err)
		}
		return out
	}
	sc.Command = expand("command", sc.Command)
	for i, a := range sc.Args {
		sc.Args[i] = expand(fmt.Sprintf("args[%d]", i), a)
	}
	for k, v := range sc.Env {
		sc.Env[k] = expand("env."+k, v)
	}
	sc.Cwd = expand("cwd", sc.Cwd)
	sc.EnvFile = expand("envFile", sc.EnvFile)
	sc.URL = expand("url", sc.URL)
	for k, v := range sc.Headers {
		sc.Headers[k] = expand("headers."+k, v)
	}
	if sc.OAuth != nil {
		sc.OAuth.ClientID = expand("oauth.clientId", sc.OAuth.ClientID)
		sc.OAuth.ClientSecret = expand("oauth.clientSecret", sc.OAuth.ClientSecret)
	}
	if err != nil {
		return ServerConfig{}, err
	}
	if sc.EnvFile != "" && !sc.Disabled {
		vars, err := godotenv.Read(sc.EnvFile)
		if err != nil {
			return fail("envFile", "%v", err)
		}
		if sc.Env == nil {
			sc.Env = map[string]string{}
		}
		for k, v := range vars {
			if _, set := sc.Env[k]; !set {
				sc.Env[k] = v
			}
		}
	}

	switch typ {
	case "":
		switch {
		case sc.Command != "" && sc.URL != "":
			return fail("", `has both "command" and "url"; keep one`)
		case sc.Command != "":
			typ = TypeStdio
		case sc.URL != "":
			typ, sc.TypeGuessed = TypeHTTP, true
		default:
			return fail("", `needs "command" (a stdio server) or "url" (a remote server)`)
		}
	case "stdio":
	case "http", "streamable-http", "streamableHttp", "streamable_http":
		typ = TypeHTTP
	case "sse":
	default:
		return fail("type", `%q is not a transport; use "stdio", "http" or "sse"`, typ)
	}
	sc.Type = typ
	switch typ {
	case TypeStdio:
		if sc.Command == "" {
			return fail("command", `is required for type "stdio"`)
		}
		if sc.URL != "" || len(sc.Headers) > 0 {
			return fail("url", `a stdio server takes "command", not "url" or "headers"`)
		}
		if sc.OAuth != nil && !sc.OAuth.Disabled {
			return fail("oauth", `authorizes a remote (http) server; a stdio server has none`)
		}
	default:
		if sc.URL == "" {
			return fail("url", "is required for type %q", typ)
		}
		if sc.Command != "" || len(sc.Args) > 0 || len(sc.Env) > 0 || sc.Cwd != "" || sc.EnvFile != "" {
			return fail("command", `a remote (%s) server takes "url" and "headers", not "command", "args", "env", "envFile" or "cwd"`, typ)
		}
		if !strings.HasPrefix(sc.URL, "http://") && !strings.HasPrefix(sc.URL, "https://") {
			return fail("url", "%q must start with http:// or https://", sc.URL)
		}
		if sc.Sandbox != nil {
			return fail("sandbox", "confines a local (stdio) server's process; a remote (%s) server has none", typ)
		}
	}
	return sc, nil
}

// decodeDuration reads a Go duration string ("30s") or a number of
// milliseconds.
func decodeDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration such as \"30s\" or a number of milliseconds", s)
		}
		return d, nil
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil || ms < 0 {
		return 0, fmt.Errorf("%s is not a duration such as \"30s\" or a number of milliseconds", raw)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// decodeStrict decodes one JSON value into v, naming the expected type on
// a mismatch ("want an array of strings, got number").
func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("got a JSON %s where %s is expected", te.Value, goTypeWord(v))
		}
		return err
	}
	return nil
}

func goTypeWord(v any) string {
	switch v.(type) {
	case *string:
		return "a string"
	case *[]string:
		return "an array of strings"
	case *map[string]string:
		return "an object of string values"
	case *bool:
		return "true or false"
	}
	return fmt.Sprintf("%T", v)
}

// varRE matches ${VAR}, ${VAR:-default} and Cursor's ${env:VAR}.
var varRE = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${VAR}, ${env:VAR} (Cursor) and ${VAR:-default} in s. An unset VAR without
// a default is an error, as in Claude Code; $VAR without braces is left
// alone.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		v, ok := lookup(sub[1])
		switch {
		case ok && v != "":
			return v
		case sub[2] != "": // ":-" as in the shell: unset or empty takes the default
			return sub[3]
		case ok:
			return v
		}
		missing = append(missing, sub[1])
		return m
	})
	if len(missing) > 0 {
		return s, fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", strings.Join(missing, ", "), missing[0])
	}
	return out, nil
}
