package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/capability"
)

func newTools(o *Options) *cobra.Command {
	var c common
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Show the effective tool set of a run and why each other tool is excluded",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := c.resolve(o)
			if err != nil {
				return err
			}
			defer r.close()
			if asJSON {
				return writeToolsJSON(cmd, r)
			}
			return writeToolsText(cmd, r)
		},
	}
	c.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {workspace, sandbox, tools: [...], excluded: [...]}")
	return cmd
}

type toolJSON struct {
	Name        string          `json:"name"`
	Group       string          `json:"group"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func writeToolsJSON(cmd *cobra.Command, r *run) error {
	out := struct {
		Workspace string                 `json:"workspace"`
		Sandbox   string                 `json:"sandbox"`
		Tools     []toolJSON             `json:"tools"`
		Excluded  []capability.Exclusion `json:"excluded"`
	}{Workspace: r.sandbox.Workspace(), Sandbox: string(r.sandbox.Kind()), Tools: []toolJSON{}, Excluded: r.exclusions}
	if out.Excluded == nil {
		out.Excluded = []capability.Exclusion{}
	}
	for _, t := range r.set.Tools() {
		g, _ := r.set.GroupOf(t.Name())
		out.Tools = append(out.Tools, toolJSON{Name: t.Name(), Group: g.Key, Description: t.Description(), InputSchema: t.InputSchema()})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeToolsText(cmd *cobra.Command, r *run) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Workspace: %s (%s sandbox)\n\n", r.sandbox.Workspace(), r.sandbox.Kind())
	tools := r.set.Tools()
	fmt.Fprintf(w, "Tools (%d):\n", len(tools))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, t := range tools {
		g, _ := r.set.GroupOf(t.Name())
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name(), g.Key, firstLine(t.Description(), 80))
	}
	tw.Flush()
	if len(r.exclusions) > 0 {
		fmt.Fprintf(w, "\nExcluded (%d):\n", len(r.exclusions))
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, e := range r.exclusions {
			name := e.Tool
			if name == "" {
				name = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, e.Group, e.Reason, e.Detail)
		}
		tw.Flush()
	}
	return nil
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
