package mcpclient

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/tool"
)

// mapResult turns an MCP CallToolResult (spec 2025-06-18, "Tools: Tool
// result") into a tool.Result: text stays text, images stay images, audio,
// resource links and binary resources become short text notes (they have no
// tool.Content form), embedded text resources become text under a header.
// When the server sent only structuredContent, its JSON is the text. The
// evidence names the server and the original tool and carries
// structuredContent when present.
func mapResult(server, orig string, res *mcp.CallToolResult) *tool.Result {
	out := &tool.Result{Evidence: tool.Evidence{tool.EvidenceMCPServer: server, tool.EvidenceMCPTool: orig}}
	for _, c := range res.Content {
		out.Content = append(out.Content, mapContent(c)...)
	}
	if res.StructuredContent != nil {
		out.Evidence[tool.EvidenceStructuredContent] = res.StructuredContent
		if len(out.Content) == 0 {
			b, err := json.Marshal(res.StructuredContent)
			if err == nil {
				out.Content = append(out.Content, tool.Content{Type: tool.TextContent, Text: string(b)})
			}
		}
	}
	return out
}

func mapContent(c mcp.Content) []tool.Content {
	note := func(format string, args ...any) []tool.Content {
		return []tool.Content{{Type: tool.TextContent, Text: fmt.Sprintf(format, args...)}}
	}
	switch c := c.(type) {
	case *mcp.TextContent:
		return []tool.Content{{Type: tool.TextContent, Text: c.Text}}
	case *mcp.ImageContent:
		return []tool.Content{{Type: tool.ImageContent, Data: c.Data, MIMEType: c.MIMEType}}
	case *mcp.AudioContent:
		return note("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		s := "[resource link: " + c.URI
		if c.Name != "" && c.Name != c.URI {
			s += " (" + c.Name + ")"
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		s += "]"
		if c.Description != "" {
			s += " " + c.Description
		}
		return note("%s", s)
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return note("[embedded resource without contents]")
		}
		if len(r.Blob) > 0 {
			if strings.HasPrefix(r.MIMEType, "image/") {
				return []tool.Content{{Type: tool.ImageContent, Data: r.Blob, MIMEType: r.MIMEType}}
			}
			return note("[resource %s, %s, %d bytes of binary data, not shown]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
		}
		head := "[resource " + r.URI
		if r.MIMEType != "" {
			head += ", " + r.MIMEType
		}
		return note("%s]\n%s", head, r.Text)
	case nil:
		return nil
	default:
		b, _ := json.Marshal(c)
		var probe struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &probe)
		return note("[%s content, not shown]", orUnknown(probe.Type))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown type"
	}
	return s
}

// resultText joins the text blocks of an MCP result, for error messages.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		for _, m := range mapContent(c) {
			if m.Type == tool.TextContent {
				parts = append(parts, m.Text)
			}
		}
	}
	s := strings.TrimSpace(strings.Join(parts, "\n"))
	if s == "" {
		return "(the server gave no message)"
	}
	return s
}
