package tool

import (
	"encoding/json"
	"fmt"
)

// Access is what one call of a tool reaches, as its tool group declares
// it: the approval target the Authorization stage decides on (permission
// rules, confirm text), so that no stage switches on tool names (issue
// 11: "Tool names are hard-coded in approval").
type Access struct {
	// Kind is the kind of access in the words of permission rules:
	// "Read" (reads, lists or searches files), "Edit" (writes or edits
	// files), "Bash" (runs a shell command), "WebFetch" (fetches a URL),
	// or "" (none of these: rules match the tool by name).
	Kind string
	// Paths are the files or folders a Read or Edit call touches, as
	// given (relative to the workspace, or absolute).
	Paths []string
	// Command is the shell command line of a Bash call.
	Command string
	// Workdir is the folder a Bash call runs in, relative to the
	// workspace ("" for the workspace root).
	Workdir string
	// URL is the address a WebFetch call fetches.
	URL string
}

// The kinds of access (Access.Kind), in the words of permission rules.
const (
	AccessRead     = "Read"
	AccessEdit     = "Edit"
	AccessBash     = "Bash"
	AccessWebFetch = "WebFetch"
)

// AccessFunc derives a call's Access from its raw input. It must accept
// any JSON object (fields it does not know are ignored; missing fields
// give zero values) and return an error only for input that is not a JSON
// object.
type AccessFunc func(input json.RawMessage) (Access, error)

// Access returns what a call with input reaches: the tool's declared
// [Spec.Access], or Access{} for a tool that declares none (rules then
// match it by name and annotations). An error means the input is not a
// JSON object; the Parameters stage refuses such a call.
func (t *Tool) Access(input json.RawMessage) (Access, error) {
	if t == nil || t.access == nil {
		return Access{}, nil
	}
	a, err := t.access(input)
	if err != nil {
		return Access{}, fmt.Errorf("tool %q: reading the access of a call: %w", t.name, err)
	}
	return a, nil
}

// AccessKind is the kind of access the tool's calls have ("" when it
// declares none), read from a call with empty input.
func (t *Tool) AccessKind() string {
	a, _ := t.Access(json.RawMessage(`{}`))
	return a.Kind
}

// PathAccess is an AccessFunc for tools whose input names one path in
// field (default "."): kind is "Read" or "Edit".
func PathAccess(kind, field string) AccessFunc {
	return func(input json.RawMessage) (Access, error) {
		var m map[string]any
		if len(input) > 0 {
			if err := json.Unmarshal(input, &m); err != nil {
				return Access{}, err
			}
		}
		p, _ := m[field].(string)
		if p == "" {
			p = "."
		}
		return Access{Kind: kind, Paths: []string{p}}, nil
	}
}
