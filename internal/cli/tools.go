package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/mcpclient"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/permissions"
	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/tool"
)

func newTools(o *Options) *cobra.Command {
	c := common{compileSchemas: true}
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
	// Schemas is what each provider dialect sends of InputSchema
	// (schemaexplain.go).
	Schemas []schemaJSON `json:"schemas,omitempty"`
}

type serverJSON struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Summary string `json:"summary"`
	Error   string `json:"error,omitempty"`
	// Confinement is a stdio server's: mode and network, e.g.
	// "workspace-write, network off", or "off".
	Confinement string `json:"confinement,omitempty"`
	// Protocol is the MCP protocol version the server settled on.
	Protocol string `json:"protocol,omitempty"`
}

// toolRow is one line of the tools listing.
type toolRow struct {
	tool     *tool.Tool
	group    string
	server   string
	exposure discovery.Exposure
	gate     string
}

// planeGroup is the group shown for the tools the tool plane adds to the
// set (tool_search, call_tool).
const planeGroup = "discovery"

// toolRows lists the set's tools with their exposure decisions, then the
// tools the tool plane adds exactly when the MCP gateway lists them (its
// tools/list answer for this set, before any activation): tool_search and
// call_tool when the count gates defer any tool. They are core tools,
// always direct. `aibuddy run` presents tool_search the same way on the
// activeTools path; call_tool is the gateway's alone.
func toolRows(r *run) []toolRow {
	dec := map[string]discovery.Decision{}
	deferred := 0
	for _, d := range discovery.NewCatalogWith(discovery.EntriesOf(r.set), r.discovery).Decisions() {
		dec[d.Tool] = d
		if d.Exposure == discovery.Deferred {
			deferred++
		}
	}
	var out []toolRow
	for _, t := range r.set.Tools() {
		d := dec[t.Name()]
		srv, _ := r.set.Server(t.Name())
		out = append(out, toolRow{tool: t, group: groupOf(r, t.Name()), server: srv, exposure: d.Exposure, gate: d.Gate})
	}
	gw := mcpserver.NewGateway(r.set, &mcpserver.Options{Version: Version, Discovery: r.discovery})
	for _, t := range gw.Tools() {
		if _, inSet := r.set.Tool(t.Name()); inSet {
			continue
		}
		gate := fmt.Sprintf("core: always direct; present because %d tools are deferred", deferred)
		if t.Name() == mcpserver.CallToolName {
			gate += " (aibuddy mcp only)"
		}
		out = append(out, toolRow{tool: t, group: planeGroup, exposure: discovery.Direct, gate: gate})
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
	conf := map[string]string{}
	for _, sc := range r.servers {
		if sc.Type != mcpclient.TypeStdio {
			continue
		}
		p, err := ServerConfinement(r.cfg, r.workspace)(sc)
		switch {
		case err != nil:
			conf[sc.Name] = "invalid: " + err.Error()
		case p.Mode == confine.Off:
			conf[sc.Name] = "off"
		default:
			conf[sc.Name] = fmt.Sprintf("%s, network %s", p.Mode, p.Network)
		}
	}
	for _, st := range r.mcp.Servers() {
		out = append(out, serverJSON{Name: st.Name, State: string(st.State), Summary: st.Summary(), Error: st.Error, Confinement: conf[st.Name], Protocol: st.Protocol})
	}
	return out
}

// confinement is execute's OS confinement as the sandbox reports it.
func confinement(r *run) *sandbox.Confinement {
	cr, ok := r.sandbox.(sandbox.ConfinementReporter)
	if !ok {
		return nil
	}
	c := cr.Confinement()
	return &c
}

func writeConfinementText(w io.Writer, c *sandbox.Confinement) {
	if c == nil {
		return
	}
	switch {
	case c.Mode == string(confine.Off):
		fmt.Fprintf(w, "Confinement of execute: off (sandbox.confinement): commands run with your user's rights\n\n")
		return
	case !c.Enforced:
		fmt.Fprintf(w, "Confinement of execute: %s, network %s: NOT ENFORCEABLE HERE, so execute is excluded\n  %s\n\n", c.Mode, c.Network, c.Unavailable)
		return
	}
	fmt.Fprintf(w, "Confinement of execute: driver %s, mode %s, network %s (enforced)\n", c.Driver, c.Mode, c.Network)
	fmt.Fprintf(w, "  layers: %s\n", strings.Join(c.Layers, "; "))
	for _, rule := range c.Rules {
		fmt.Fprintf(w, "  - %s\n", rule)
	}
	fmt.Fprintln(w)
}

func writeToolsJSON(cmd *cobra.Command, r *run) error {
	out := struct {
		Workspace   string                 `json:"workspace"`
		Sandbox     string                 `json:"sandbox"`
		Permissions string                 `json:"permissions"`
		Confinement *sandbox.Confinement   `json:"confinement,omitempty"`
		MCPServers  []serverJSON           `json:"mcpServers"`
		Tools       []toolJSON             `json:"tools"`
		Excluded    []capability.Exclusion `json:"excluded"`
	}{Workspace: r.sandbox.Workspace(), Sandbox: string(r.sandbox.Kind()), Permissions: permissionSummary(r), Confinement: confinement(r), MCPServers: servers(r), Tools: []toolJSON{}, Excluded: r.exclusions}
	if out.Excluded == nil {
		out.Excluded = []capability.Exclusion{}
	}
	rows := toolRows(r)
	dec, err := schemaDecisions(r, rows)
	if err != nil {
		return err
	}
	for _, row := range rows {
		t := row.tool
		out.Tools = append(out.Tools, toolJSON{Name: t.Name(), Group: row.group, Server: row.server,
			Exposure: string(row.exposure), Gate: row.gate, Description: t.Description(), InputSchema: t.InputSchema(), Schemas: dec[t.Name()]})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeToolsText(cmd *cobra.Command, r *run) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Workspace: %s (%s sandbox)\n", r.sandbox.Workspace(), r.sandbox.Kind())
	fmt.Fprintf(w, "Permissions: %s\n\n", permissionSummary(r))
	writeConfinementText(w, confinement(r))
	if sv := servers(r); len(sv) > 0 {
		fmt.Fprintf(w, "MCP servers (%d):\n", len(sv))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, s := range sv {
			line := s.Summary
			if s.Confinement != "" {
				line += "\tconfinement: " + s.Confinement
			}
			fmt.Fprintf(tw, "  %s\t%s\n", s.Name, line)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	rows := toolRows(r)
	fmt.Fprintf(w, "Tools (%d):\n", len(rows))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", row.tool.Name(), row.group, row.exposure, row.gate, firstLine(row.tool.Description(), 60))
	}
	tw.Flush()
	dec, err := schemaDecisions(r, rows)
	if err != nil {
		return err
	}
	writeSchemasText(w, rows, dec)
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

// permissionSummary says in one line which permission mode and how many
// rules decide the run's calls.
func permissionSummary(r *run) string {
	if r.policy == nil {
		return "off (approval.off): no call is confirmed or denied by rules"
	}
	eng, err := r.policy.Engine()
	if err != nil {
		return "refusing every call: " + err.Error()
	}
	n := map[permissions.List]int{}
	for _, rule := range eng.Rules() {
		if rule.Source != "built-in credential paths" {
			n[rule.List]++
		}
	}
	counts := fmt.Sprintf("%d deny, %d ask, %d allow rules", n[permissions.ListDeny], n[permissions.ListAsk], n[permissions.ListAllow])
	switch eng.Mode() {
	case permissions.ModeUnset:
		return "no permissions block; " + counts + " from the approval keys; what no rule holds back runs"
	case permissions.ModePlan:
		return `defaultMode "plan": only read-only tools are offered (access kind Read or readOnlyHint); ` + counts
	}
	return fmt.Sprintf("defaultMode %q; %s", string(eng.Mode()), counts)
}
