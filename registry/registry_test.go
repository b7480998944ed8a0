package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

func build(names ...string) func(registry.Env) ([]*tool.Tool, error) {
	return func(registry.Env) ([]*tool.Tool, error) {
		var out []*tool.Tool
		for _, n := range names {
			out = append(out, tool.MustDefine(tool.Spec{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`),
				Handler: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(n), nil }}))
		}
		return out, nil
	}
}

func TestConsistentRegistry(t *testing.T) {
	fs := []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep"}
	r := registry.New([]registry.Group{
		{Key: "filesystem", Names: fs, Build: build(fs...)},
		{Key: "execute", Names: []string{"execute"}, Build: build("execute")},
	}, []registry.Meta{{Key: "filesystem", DisplayName: "Files"}, {Key: "execute", DisplayName: "Shell"}}, nil)
	if err := r.AssertConsistent(); err != nil {
		t.Fatal(err)
	}
	for _, n := range fs {
		if k, _ := r.GroupOf(n); k != "filesystem" {
			t.Errorf("%s maps to %q, want filesystem", n, k)
		}
	}
}

func TestAssertConsistentListsEveryProblem(t *testing.T) {
	r := registry.New([]registry.Group{
		{Key: "filesystem", Names: []string{"ls", "read_file"}, Build: build("ls", "read_file")},
		{Key: "shell", Names: []string{"execute", "ls"}, Build: build("execute", "ls")}, // ls twice; no meta
		{Key: "empty"}, // no names, no build
	}, []registry.Meta{{Key: "filesystem"}, {Key: "empty"}, {Key: "browser"}}, // browser is orphan
		map[string]string{"ls": "filesystem", "read_file": "filesystem", "execute": "shell", "screenshot": "browser"})
	err := r.AssertConsistent()
	if !errors.Is(err, registry.ErrInconsistent) {
		t.Fatalf("got %v, want ErrInconsistent", err)
	}
	var ie *registry.InconsistentError
	if !errors.As(err, &ie) {
		t.Fatalf("got %T", err)
	}
	want := []string{
		`group "empty" declares no tool names`,
		`group "empty" has no Build function`,
		`group "shell" has no metadata entry`,
		`orphan metadata: "browser" describes no registered group`,
		`tool "ls" of group "shell" is mapped to group "filesystem"`,
		`tool "screenshot" is mapped to unknown group "browser"`,
		`tool name "ls" is produced by more than one group: filesystem, shell`,
	}
	if strings.Join(ie.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(ie.Problems, "\n"), strings.Join(want, "\n"))
	}
}
