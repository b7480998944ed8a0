package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/discovery"
	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/tool"
)

func newCall(o *Options) *cobra.Command {
	var c common
	var asJSON, stream bool
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON|-]",
		Short: "Run one tool call through the whole pipeline and print the result",
		Long: `Run one tool call through the same pipeline an MCP host or a model uses
(tool set, schema check, sandbox, bounds) and print the result.

The input is a JSON object as the second argument, or read from stdin with "-"
(default {}). The exit code is 0 on success and 1 when the call failed; the
failure's stage is printed with the error.`,
		Example: `  aibuddy call read_file '{"path":"README.md","limit":20}'
  aibuddy call execute '{"command":"go version"}'
  echo '{"pattern":"TODO"}' | aibuddy call grep -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			input := []byte("{}")
			if len(args) == 2 {
				if args[1] == "-" {
					b, err := io.ReadAll(cmd.InOrStdin())
					if err != nil {
						return usageErr("reading the input from stdin: %v", err)
					}
					input = b
				} else {
					input = []byte(args[1])
				}
			}
			c.builtinCall = args[0]
			c.oneShot = true
			r, err := c.resolve(cmd.Context(), o)
			if err != nil {
				return err
			}
			defer r.close()
			call := &tool.Call{ID: tool.NewCallID("cli_"), Name: args[0], Input: input}
			if stream {
				errw := cmd.ErrOrStderr()
				call.Events = func(e tool.Event) {
					if e.Kind == tool.EventStdout || e.Kind == tool.EventStderr {
						_, _ = errw.Write(e.Data)
					}
				}
			}
			// One call is one run. Naming a tool on the command line is a
			// person's explicit choice, like tool_search's select:, so a
			// deferred tool is activated for it; a name outside the set is
			// still a Discovery-stage error. The call goes through the
			// same pipeline as one from an MCP host or a model.
			cat := discovery.NewCatalogWith(discovery.EntriesOf(r.set), r.discovery)
			dr := cat.NewRun()
			dr.Activate(call.Name)
			p := r.pipeline(callerConfirms)
			res := p.Handler(pipeline.Run{TaskID: newTaskID("cli"), Tools: pipeline.Fixed(r.set, dr)})(cmd.Context(), call)
			if asJSON {
				if err := writeResultJSON(cmd.OutOrStdout(), call, res); err != nil {
					return &exitError{code: ExitFailure, err: err}
				}
			} else {
				writeResultText(cmd, res)
			}
			if res.IsError {
				return &exitError{code: ExitToolError, err: fmt.Errorf("")}
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole result as JSON (content, isError, stage, evidence)")
	cmd.Flags().BoolVar(&stream, "stream", false, "copy live command output to stderr while the call runs")
	return cmd
}

// callerConfirms is the confirmer of aibuddy call: the person at the
// shell who typed the call is the one who would be asked, so an action
// the policy puts to a person is approved, and its exchange recorded as
// such. A call the policy denies (a path denied to the file tools) is
// still refused at the Authorization stage.
var callerConfirms = approval.ConfirmerFunc(func(context.Context, approval.Action) (approval.Decision, error) {
	return approval.Decision{Approved: true, Note: "approved by running aibuddy call"}, nil
})

func writeResultText(cmd *cobra.Command, res *tool.Result) {
	w := cmd.OutOrStdout()
	if res.IsError {
		w = cmd.ErrOrStderr()
	}
	for _, c := range res.Content {
		switch c.Type {
		case tool.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		default:
			fmt.Fprint(w, c.Text)
			if len(c.Text) > 0 && c.Text[len(c.Text)-1] != '\n' {
				fmt.Fprintln(w)
			}
		}
	}
}

func writeResultJSON(w io.Writer, call *tool.Call, res *tool.Result) error {
	type content struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		Data     []byte `json:"data,omitempty"`
		MIMEType string `json:"mimeType,omitempty"`
	}
	out := struct {
		ToolCallID string        `json:"toolCallId"`
		Tool       string        `json:"tool"`
		IsError    bool          `json:"isError"`
		Stage      string        `json:"stage,omitempty"`
		Content    []content     `json:"content"`
		Evidence   tool.Evidence `json:"evidence,omitempty"`
	}{ToolCallID: call.ID, Tool: call.Name, IsError: res.IsError, Stage: string(res.Stage), Evidence: res.Evidence, Content: []content{}}
	for _, c := range res.Content {
		out.Content = append(out.Content, content{Type: string(c.Type), Text: c.Text, Data: c.Data, MIMEType: c.MIMEType})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
