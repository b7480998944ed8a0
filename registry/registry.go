package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// Meta describes a group for people: what a settings screen or `aibuddy
// tools` shows (the seed's TOOL_CONFIG_METAS entry).
type Meta struct {
	Key         string // the group's key, e.g. "filesystem"
	DisplayName string // e.g. "Files"
	Category    string // e.g. "filesystem", "execution", "interaction"
	Description string // one sentence
}

// Requirements are what a group needs before any of its tools may be
// exposed in a run. A run that lacks one gets none of the group's tools,
// each excluded with the reason (seed: "A configuration with missing
// dependencies can return an empty tool set instead of exposing an action
// that must fail").
type Requirements struct {
	// Services are names of injected capability services (RunSpec.Services).
	Services []string
	// SandboxOps are sandbox operations the tools call.
	SandboxOps []sandbox.Op
	// Prerequisites are run state flags such as "team" or "knowledge".
	Prerequisites []string
	// MCPServers are MCP servers that must be connected.
	MCPServers []string
}

// Env is what a group receives to build its tools for one run.
type Env struct {
	Sandbox  sandbox.Sandbox
	Services map[string]any // the run's injected services, by name
	// Tool finds a tool of the run's resolved set by name, for what the
	// tool declares (view_tool_call reads tool.Tool.OutputFile). It
	// answers once resolution is done, so a tool may keep it and call it
	// during calls, never during Build. nil outside a resolution.
	Tool func(name string) (*tool.Tool, bool)
}

// Service returns the named service as T, or false.
func Service[T any](env Env, name string) (T, bool) {
	v, ok := env.Services[name].(T)
	return v, ok
}

// Hooks are a group's shared result behaviour: every tool the group maps
// back to gets the same hooks (seed: "map those names back to one
// configuration for shared client projection and compaction behavior").
type Hooks struct {
	// OnResult runs after each call of one of the group's tools, before
	// the result is handed back. It may return a replacement result (for
	// example a compact model form); returning nil keeps res.
	OnResult func(ctx context.Context, call *tool.Call, res *tool.Result) *tool.Result
}

// Group is one tool group (the seed's ServerToolConfig): it builds its tools
// for a run, gives the runtime instructions for the system prompt, and owns
// the result hooks of those tools.
type Group struct {
	// Key is the tool key users name in configuration, e.g. "filesystem".
	Key string
	// Names are the tool names Build produces; they form the group's part
	// of the name → group mapping.
	Names []string
	// Requires lists the run's dependencies.
	Requires Requirements
	// Build creates the group's tools for one run. Fresh per run: per-run
	// state (such as which files were read) lives in the returned tools.
	Build func(env Env) ([]*tool.Tool, error)
	// Instructions is text for the system prompt when the group is active.
	Instructions string
	// Hooks are shared by all of the group's tools.
	Hooks Hooks
}

// Registry is the start-up catalogue of groups, metadata and name mapping.
// It is built once and read-only afterwards.
type Registry struct {
	groups []Group
	metas  []Meta
	names  map[string]string // tool name → group key
}

// New builds a registry. When names is nil, the mapping is derived from
// each group's Names; a non-nil names is used as given (hosts that keep the
// mapping elsewhere, as the seed's TOOL_NAME_TO_CONFIG does).
// New does not check consistency: call AssertConsistent.
func New(groups []Group, metas []Meta, names map[string]string) *Registry {
	r := &Registry{groups: slices.Clone(groups), metas: slices.Clone(metas), names: map[string]string{}}
	if names == nil {
		for _, g := range groups {
			for _, n := range g.Names {
				if _, dup := r.names[n]; !dup {
					r.names[n] = g.Key
				}
			}
		}
	} else {
		for k, v := range names {
			r.names[k] = v
		}
	}
	return r
}

// ErrInconsistent is wrapped by the error AssertConsistent returns.
var ErrInconsistent = errors.New("tool registry is inconsistent")

// InconsistentError lists every consistency problem at once.
type InconsistentError struct {
	Problems []string // one sentence each, sorted
}

func (e *InconsistentError) Error() string {
	return fmt.Sprintf("%v: %d problem(s):\n  - %s", ErrInconsistent, len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

func (e *InconsistentError) Unwrap() error { return ErrInconsistent }

// AssertConsistent compares groups, metadata and the name mapping (seed:
// "assertConsistent compares registered configurations, TOOL_CONFIG_METAS,
// and name mappings"). It returns nil, or an *InconsistentError listing
// every problem: a group without metadata, an orphan metadata entry, a key
// registered twice, a group without a key, Build or tool names, a name
// mapped to an unknown group, a group's tool missing from the mapping or
// mapped to another group, and a tool name produced by two groups.
func (r *Registry) AssertConsistent() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	groupKeys := map[string]int{}
	for _, g := range r.groups {
		if g.Key == "" {
			add("a group has an empty key (tools %v)", g.Names)
			continue
		}
		groupKeys[g.Key]++
	}
	for k, n := range groupKeys {
		if n > 1 {
			add("group %q is registered %d times", k, n)
		}
	}
	metaKeys := map[string]int{}
	for _, m := range r.metas {
		metaKeys[m.Key]++
	}
	for k, n := range metaKeys {
		if n > 1 {
			add("metadata for %q is declared %d times", k, n)
		}
		if groupKeys[k] == 0 {
			add("orphan metadata: %q describes no registered group", k)
		}
	}
	producers := map[string][]string{}
	for _, g := range r.groups {
		if g.Key == "" {
			continue
		}
		if metaKeys[g.Key] == 0 {
			add("group %q has no metadata entry", g.Key)
		}
		if g.Build == nil {
			add("group %q has no Build function", g.Key)
		}
		if len(g.Names) == 0 {
			add("group %q declares no tool names", g.Key)
		}
		for _, n := range g.Names {
			producers[n] = append(producers[n], g.Key)
			switch mapped, ok := r.names[n]; {
			case !ok:
				add("tool %q of group %q is missing from the name mapping", n, g.Key)
			case mapped != g.Key:
				add("tool %q of group %q is mapped to group %q", n, g.Key, mapped)
			}
		}
	}
	for n, groups := range producers {
		if len(groups) > 1 {
			add("tool name %q is produced by more than one group: %s", n, strings.Join(groups, ", "))
		}
	}
	for n, k := range r.names {
		if groupKeys[k] == 0 {
			add("tool %q is mapped to unknown group %q", n, k)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return &InconsistentError{Problems: problems}
}

// Groups returns the groups in registration order.
func (r *Registry) Groups() []Group { return slices.Clone(r.groups) }

// Group returns the group with key.
func (r *Registry) Group(key string) (Group, bool) {
	for _, g := range r.groups {
		if g.Key == key {
			return g, true
		}
	}
	return Group{}, false
}

// Meta returns the metadata of the group with key.
func (r *Registry) Meta(key string) (Meta, bool) {
	for _, m := range r.metas {
		if m.Key == key {
			return m, true
		}
	}
	return Meta{}, false
}

// GroupOf returns the key of the group a tool name maps back to.
func (r *Registry) GroupOf(toolName string) (string, bool) {
	k, ok := r.names[toolName]
	return k, ok
}

// Keys returns every group key in registration order.
func (r *Registry) Keys() []string {
	keys := make([]string, 0, len(r.groups))
	for _, g := range r.groups {
		keys = append(keys, g.Key)
	}
	return keys
}
