package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
)

func newTools(o *Options) *cobra.Command {
	var c common
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Show the effective tool set of a run and why each other tool is excluded",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := c.resolve(cmd.Context(), o)
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
	Server      string          `json:"server,omitempty"`
	Exposure    string          `json:"exposure"` // "direct" or "deferred"
	Gate        string          `json:"gate"`     // which rule decided the exposure
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

type serverJSON struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Summary string `json:"summary"`
	Error   string `json:"error,omitempty"`
}

// decisions maps each tool of the set to its exposure decision.
func decisions(r *run) map[string]discovery.Decision {
	out := map[string]discovery.Decision{}
	for _, d := range discovery.NewCatalogWith(discovery.EntriesOf(r.set), r.discovery).Decisions() {
		out[d.Tool] = d
	}
	return out
}

func groupOf(r *run, name string) string {
	if srv, ok := r.set.Server(name); ok {
		return "mcp:" + srv
	}
	g, _ := r.set.GroupOf(name)
	return g.Key
}

func servers(r *run) []serverJSON {
	out := []serverJSON{}
	if r.mcp == nil {
		return out
	}
	for _, st := range r.mcp.Servers() {
		out = append(out, serverJSON{Name: st.Name, State: string(st.State), Summary: st.Summary(), Error: st.Error})
	}
	return out
}

func writeToolsJSON(cmd *cobra.Command, r *run) error {
	out := struct {
		Workspace  string                 `json:"workspace"`
		Sandbox    string                 `json:"sandbox"`
		MCPServers []serverJSON           `json:"mcpServers"`
		Tools      []toolJSON             `json:"tools"`
		Excluded   []capability.Exclusion `json:"excluded"`
	}{Workspace: r.sandbox.Workspace(), Sandbox: string(r.sandbox.Kind()), MCPServers: servers(r), Tools: []toolJSON{}, Excluded: r.exclusions}
	if out.Excluded == nil {
		out.Excluded = []capability.Exclusion{}
	}
	dec := decisions(r)
	for _, t := range r.set.Tools() {
		d := dec[t.Name()]
		srv, _ := r.set.Server(t.Name())
		out.Tools = append(out.Tools, toolJSON{Name: t.Name(), Group: groupOf(r, t.Name()), Server: srv,
			Exposure: string(d.Exposure), Gate: d.Gate, Description: t.Description(), InputSchema: t.InputSchema()})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeToolsText(cmd *cobra.Command, r *run) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Workspace: %s (%s sandbox)\n\n", r.sandbox.Workspace(), r.sandbox.Kind())
	if sv := servers(r); len(sv) > 0 {
		fmt.Fprintf(w, "MCP servers (%d):\n", len(sv))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, s := range sv {
			fmt.Fprintf(tw, "  %s\t%s\n", s.Name, s.Summary)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tools := r.set.Tools()
	dec := decisions(r)
	fmt.Fprintf(w, "Tools (%d):\n", len(tools))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, t := range tools {
		d := dec[t.Name()]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", t.Name(), groupOf(r, t.Name()), d.Exposure, d.Gate, firstLine(t.Description(), 60))
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
