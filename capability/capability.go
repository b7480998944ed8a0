package capability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// RunSpec is what one run brings to resolution.
type RunSpec struct {
	// ToolKeys are the configured group keys. nil means every registered
	// group; an empty non-nil slice means none.
	ToolKeys []string
	// Services are the injected capability services, by name.
	Services map[string]any
	// MCP are the run's MCP servers: a connected server's usable tools
	// join the set (after the built-in groups, in server order); a server
	// that is not connected, and each tool a server offers whose schema
	// could not be used, become exclusions with their reasons.
	MCP []MCPServer
	// Sandbox is the run's sandbox; nil means no sandbox (every group that
	// needs a sandbox operation is excluded).
	Sandbox sandbox.Sandbox
	// Prerequisites are the run's state flags that hold (e.g. "team").
	Prerequisites []string
	// Reuse, when set, is the run's previous set: a group that does not
	// depend on MCP servers and was built there keeps those tools instead
	// of being built again, so per-run tool state (such as which files
	// were read) survives a refresh after an MCP server's tools changed.
	Reuse *Set
	// Offered, when set, says whether a tool may be offered at all, and
	// if not why (permission rules: a tool a bare deny rule names, or
	// plan mode's read-only set). server is the tool's MCP server, "" for
	// a built-in tool. A tool it refuses is an exclusion with reason
	// NotPermitted.
	Offered func(t *tool.Tool, server string) (ok bool, why string)
}

// MCPServer is one configured MCP server as a run sees it (package
// mcpclient produces these from its connections).
type MCPServer struct {
	Name      string
	Connected bool
	// Error says why the server is not connected (failed, hung in
	// initialize, disconnected); empty when connected.
	Error string
	// Tools are the server's usable tools, already namespaced
	// (<server>__<tool>) and defined through tool.Define.
	Tools []*tool.Tool
	// Quarantined are the tools the server offers that cannot be used,
	// with why (for example an input schema whose top level is not an
	// object).
	Quarantined []Quarantined
}

// Quarantined is an offered MCP tool that could not be used.
type Quarantined struct {
	Tool   string // the original MCP tool name
	Reason string // names server and tool
}

// Reason classifies why a tool was excluded.
type Reason string

// Exclusion reasons, in the order Resolve checks them.
const (
	NotConfigured      Reason = "not_configured"      // the group's key is not in ToolKeys
	UnknownKey         Reason = "unknown_key"         // ToolKeys names a group that is not registered
	MissingService     Reason = "missing_service"     // a required service is not injected
	MCPNotConnected    Reason = "mcp_not_connected"   // a required MCP server is not connected
	SandboxUnsupported Reason = "sandbox_unsupported" // the sandbox lacks a required operation
	// ConfinementUnavailable: the sandbox's configured OS confinement
	// cannot be enforced here, so the operation that needs it is left out
	// (never run unconfined); the detail names the missing piece and the
	// fix.
	ConfinementUnavailable Reason = "confinement_unavailable"
	MissingPrereq          Reason = "missing_prerequisite"
	BuildFailed            Reason = "build_failed"      // the group's Build returned an error
	ServerFailed           Reason = "mcp_server_failed" // an MCP server is not connected: none of its tools
	SchemaUnusable         Reason = "schema_unusable"   // an MCP tool's input schema could not be used
	Undeclared             Reason = "undeclared"        // Build produced a name the group does not declare
	NotPermitted           Reason = "not_permitted"     // the permission rules do not offer the tool (RunSpec.Offered)
)

// Exclusion is one tool (or, for UnknownKey, one key) left out of the set.
type Exclusion struct {
	Tool   string `json:"tool,omitempty"` // empty for UnknownKey and ServerFailed
	Group  string `json:"group"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail"` // one sentence for people
}

func (e Exclusion) String() string {
	name := e.Tool
	if name == "" {
		name = "(" + e.Group + ")"
	}
	return name + ": " + e.Detail
}

// Set is the effective tool set of one run: the built-in groups' tools in
// registry order, then the MCP servers' tools.
type Set struct {
	tools  []*tool.Tool
	groups map[string]registry.Group // tool name → its group (built-in tools)
	server map[string]string         // tool name → MCP server (MCP tools)
	active []string                  // group keys with tools in the set
}

// Lookup returns a tool of the set with the MCP server it comes from (""
// for a built-in tool): the shape approval.Gate.Lookup takes.
func (s *Set) Lookup(name string) (t *tool.Tool, server string, ok bool) {
	if t, ok = s.Tool(name); !ok {
		return nil, "", false
	}
	server, _ = s.Server(name)
	return t, server, true
}

// groupTools returns the tools of the set built by group key, or nil (also
// for a nil set).
func (s *Set) groupTools(key string) []*tool.Tool {
	if s == nil {
		return nil
	}
	var out []*tool.Tool
	for _, t := range s.tools {
		if g, ok := s.groups[t.Name()]; ok && g.Key == key {
			out = append(out, t)
		}
	}
	return out
}

// Server returns the MCP server a tool of the set comes from; ok is false
// for a built-in tool.
func (s *Set) Server(name string) (server string, ok bool) {
	server, ok = s.server[name]
	return server, ok
}

// Tools returns the tools in the set.
func (s *Set) Tools() []*tool.Tool { return slices.Clone(s.tools) }

// Tool returns the tool with name, if it is in the set.
func (s *Set) Tool(name string) (*tool.Tool, bool) {
	for _, t := range s.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Names returns the tool names in the set.
func (s *Set) Names() []string {
	out := make([]string, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.Name()
	}
	return out
}

// GroupOf returns the group a tool of the set belongs to.
func (s *Set) GroupOf(name string) (registry.Group, bool) {
	g, ok := s.groups[name]
	return g, ok
}

// Instructions joins the runtime instructions of the active groups, in
// registry order, separated by blank lines.
func (s *Set) Instructions() string {
	var parts []string
	seen := map[string]bool{}
	for _, t := range s.tools {
		g := s.groups[t.Name()]
		if !seen[g.Key] && strings.TrimSpace(g.Instructions) != "" {
			seen[g.Key] = true
			parts = append(parts, strings.TrimSpace(g.Instructions))
		}
	}
	return strings.Join(parts, "\n\n")
}

// Call runs a call against the set: a name outside the set is a
// Discovery-stage error result (the tool does not exist in this run);
// otherwise the tool's own Call (schema check, handler) runs, then the
// group's OnResult hook.
func (s *Set) Call(ctx context.Context, call *tool.Call) *tool.Result {
	t, ok := s.Tool(call.Name)
	if !ok {
		return tool.ErrorResult(tool.Errorf(tool.Discovery, "no tool named %q is available in this run", call.Name).
			WithHint("use one of: "+strings.Join(s.Names(), ", ")), call.Name)
	}
	res := t.Call(ctx, call)
	if g, ok := s.groups[call.Name]; ok && g.Hooks.OnResult != nil {
		if r := g.Hooks.OnResult(ctx, call, res); r != nil {
			res = r
		}
	}
	return res
}

// Resolve computes the effective tool set of one run and the exclusions,
// each with its reason. It never returns a tool whose dependencies are
// missing. The error is non-nil only when two tools would share a name: a
// group's Build produced a name another group holds (the registry check at
// start-up should have caught it), or an MCP tool's namespaced name equals
// a built-in tool's or another server's.
func Resolve(reg *registry.Registry, spec RunSpec) (*Set, []Exclusion, error) {
	set := &Set{groups: map[string]registry.Group{}, server: map[string]string{}}
	var ex []Exclusion
	configured := map[string]bool{}
	if spec.ToolKeys == nil {
		for _, k := range reg.Keys() {
			configured[k] = true
		}
	} else {
		for _, k := range spec.ToolKeys {
			configured[k] = true
			if _, ok := reg.Group(k); !ok {
				ex = append(ex, Exclusion{Group: k, Reason: UnknownKey,
					Detail: fmt.Sprintf("tool key %q is configured but no such group is registered (known: %s)", k, strings.Join(reg.Keys(), ", "))})
			}
		}
	}
	connected := map[string]bool{}
	for _, m := range spec.MCP {
		if m.Connected {
			connected[m.Name] = true
		}
	}
	prereqs := toSet(spec.Prerequisites)
	// A tool may look up its run's other tools (their declarations) once
	// the set is complete: the lookup reads the set Resolve returns.
	env := registry.Env{Sandbox: spec.Sandbox, Services: spec.Services, Tool: set.Tool}
	for _, g := range reg.Groups() {
		exclude := func(reason Reason, detail string) {
			for _, n := range g.Names {
				ex = append(ex, Exclusion{Tool: n, Group: g.Key, Reason: reason, Detail: detail})
			}
		}
		if !configured[g.Key] {
			exclude(NotConfigured, fmt.Sprintf("tool key %q is not in the configured tool keys", g.Key))
			continue
		}
		if reason, detail := missing(g.Requires, spec, connected, prereqs); reason != "" {
			exclude(reason, detail)
			continue
		}
		var tools []*tool.Tool
		if prev := spec.Reuse.groupTools(g.Key); prev != nil && len(g.Requires.MCPServers) == 0 {
			tools = prev
		} else {
			built, err := g.Build(env)
			if err != nil {
				exclude(BuildFailed, fmt.Sprintf("group %q could not build its tools: %v", g.Key, err))
				continue
			}
			tools = built
		}
		for _, t := range tools {
			if !slices.Contains(g.Names, t.Name()) {
				ex = append(ex, Exclusion{Tool: t.Name(), Group: g.Key, Reason: Undeclared,
					Detail: fmt.Sprintf("group %q built %q, which it does not declare in its names", g.Key, t.Name())})
				continue
			}
			if other, dup := set.groups[t.Name()]; dup {
				return nil, nil, fmt.Errorf("capability: tool %q is built by groups %q and %q", t.Name(), other.Key, g.Key)
			}
			if spec.Offered != nil {
				if ok, why := spec.Offered(t, ""); !ok {
					ex = append(ex, Exclusion{Tool: t.Name(), Group: g.Key, Reason: NotPermitted, Detail: why})
					continue
				}
			}
			set.tools = append(set.tools, t)
			set.groups[t.Name()] = g
		}
		set.active = append(set.active, g.Key)
	}
	for _, m := range spec.MCP {
		group := "mcp:" + m.Name
		if !m.Connected {
			detail := fmt.Sprintf("MCP server %q is not connected", m.Name)
			if m.Error != "" {
				detail += ": " + m.Error
			}
			ex = append(ex, Exclusion{Group: group, Reason: ServerFailed, Detail: detail})
			continue
		}
		for _, q := range m.Quarantined {
			ex = append(ex, Exclusion{Tool: q.Tool, Group: group, Reason: SchemaUnusable, Detail: q.Reason})
		}
		for _, t := range m.Tools {
			if owner, dup := set.groups[t.Name()]; dup {
				return nil, nil, fmt.Errorf("capability: MCP tool %q of server %q has the name of a tool of group %q", t.Name(), m.Name, owner.Key)
			}
			if other, dup := set.server[t.Name()]; dup {
				return nil, nil, fmt.Errorf("capability: MCP tool %q is offered by servers %q and %q", t.Name(), other, m.Name)
			}
			if spec.Offered != nil {
				if ok, why := spec.Offered(t, m.Name); !ok {
					ex = append(ex, Exclusion{Tool: t.Name(), Group: group, Reason: NotPermitted, Detail: why})
					continue
				}
			}
			set.tools = append(set.tools, t)
			set.server[t.Name()] = m.Name
		}
	}
	return set, ex, nil
}

func missing(req registry.Requirements, spec RunSpec, connected, prereqs map[string]bool) (Reason, string) {
	for _, s := range req.Services {
		if _, ok := spec.Services[s]; !ok {
			return MissingService, fmt.Sprintf("needs the %q service, which this host does not inject", s)
		}
	}
	for _, m := range req.MCPServers {
		if !connected[m] {
			return MCPNotConnected, fmt.Sprintf("needs MCP server %q, which is not connected", m)
		}
	}
	for _, op := range req.SandboxOps {
		if spec.Sandbox == nil {
			return SandboxUnsupported, fmt.Sprintf("needs sandbox operation %q and the run has no sandbox", op)
		}
		if !spec.Sandbox.Supports(op) {
			if oc, ok := spec.Sandbox.(sandbox.OpChecker); ok {
				if err := oc.CheckOp(op); err != nil && errors.Is(err, sandbox.ErrConfinement) {
					return ConfinementUnavailable, fmt.Sprintf("needs sandbox operation %q, which the %s sandbox refuses: %v", op, spec.Sandbox.Kind(), err)
				}
			}
			return SandboxUnsupported, fmt.Sprintf("needs sandbox operation %q, which the %s sandbox does not support", op, spec.Sandbox.Kind())
		}
	}
	for _, p := range req.Prerequisites {
		if !prereqs[p] {
			return MissingPrereq, fmt.Sprintf("needs prerequisite %q, which does not hold in this run", p)
		}
	}
	return "", ""
}

func toSet(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
