package anthropicmodel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/aibuddy/aibuddy/provider"
)

// MaxImageBase64 is Anthropic's limit on one image: 5 MB of base64
// (https://docs.anthropic.com/en/docs/build-with-claude/vision, "maximum
// 5MB per image" via the API; the rejection reads "image exceeds 5 MB
// maximum: N bytes > 5242880 bytes"; case BH-013).
const MaxImageBase64 = 5 * 1024 * 1024

// imageTypes are the media types the API accepts for base64 images.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// origin locates an API content block in the neutral transcript; msg is -1
// for a block the adapter added.
type origin struct{ msg, block int }

// entry is a neutral block with where it came from.
type entry struct {
	b provider.Block
	o origin
}

type turn struct {
	role   provider.Role
	blocks []entry
}

// messages converts the transcript, repairing tool_use/tool_result pairing
// first, and returns per API message the origin of each API block.
func messages(in []provider.Message) ([]anthropic.MessageParam, [][]origin) {
	turns := pair(in)
	var out []anthropic.MessageParam
	var origins [][]origin
	for _, t := range turns {
		var blocks []anthropic.ContentBlockParamUnion
		var os []origin
		for _, e := range t.blocks {
			b, ok := block(e.b)
			if !ok {
				continue
			}
			blocks = append(blocks, b)
			os = append(os, e.o)
		}
		if len(blocks) == 0 {
			continue // the API rejects empty content
		}
		if t.role == provider.Assistant {
			out = append(out, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
		} else {
			out = append(out, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{Content: blocks}})
		}
		origins = append(origins, os)
	}
	return out, origins
}

// pair makes every tool_use answered by exactly one tool_result in the user
// message right after its assistant message, results first and in call
// order (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use,
// "tool_result blocks must immediately follow their corresponding tool_use
// blocks"; cases BH-051, BH-053). A missing result becomes an is_error
// result saying so; a result with no call right before it, or a second
// result for one call, becomes text.
func pair(in []provider.Message) []turn {
	var out []turn
	for i := 0; i < len(in); i++ {
		m := in[i]
		t := turn{role: m.Role}
		for j, b := range m.Blocks {
			t.blocks = append(t.blocks, entry{b, origin{i, j}})
		}
		if m.Role != provider.Assistant {
			t.blocks = orphanResults(t.blocks)
			out = append(out, t)
			continue
		}
		out = append(out, t)
		var ids []string
		for _, b := range m.Blocks {
			if b.Type == provider.ToolUse {
				ids = append(ids, b.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		var next []entry
		if i+1 < len(in) && in[i+1].Role == provider.User {
			i++
			for j, b := range in[i].Blocks {
				next = append(next, entry{b, origin{i, j}})
			}
		}
		found := map[string]entry{}
		var rest []entry
		for _, e := range next {
			if e.b.Type == provider.ToolResult {
				if _, dup := found[e.b.ToolUseID]; !dup && contains(ids, e.b.ToolUseID) {
					found[e.b.ToolUseID] = e
					continue
				}
			}
			rest = append(rest, e)
		}
		u := turn{role: provider.User}
		for _, id := range ids {
			if e, ok := found[id]; ok {
				u.blocks = append(u.blocks, e)
				continue
			}
			u.blocks = append(u.blocks, entry{provider.Block{
				Type: provider.ToolResult, ToolUseID: id, IsError: true,
				Content: []provider.Block{{Type: provider.Text, Text: "no result was recorded for this call (interrupted or lost); its effect, if any, is unknown"}},
			}, origin{-1, -1}})
		}
		u.blocks = append(u.blocks, orphanResults(rest)...)
		out = append(out, u)
	}
	return out
}

// orphanResults turns tool_result blocks without their call into text.
func orphanResults(es []entry) []entry {
	out := make([]entry, 0, len(es))
	for _, e := range es {
		if e.b.Type != provider.ToolResult {
			out = append(out, e)
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "[result of tool call %s, whose call is no longer in context", e.b.ToolUseID)
		if e.b.IsError {
			sb.WriteString("; it failed")
		}
		sb.WriteString("]")
		for _, c := range e.b.Content {
			switch c.Type {
			case provider.Text:
				sb.WriteString("\n" + c.Text)
			case provider.Image:
				fmt.Fprintf(&sb, "\n[image %s, %d bytes, omitted]", c.MIMEType, len(c.Data))
			}
		}
		out = append(out, entry{provider.Block{Type: provider.Text, Text: sb.String()}, e.o})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// block converts one neutral block; ok is false for blocks this provider
// does not take (another provider's opaque block, an empty text).
func block(b provider.Block) (anthropic.ContentBlockParamUnion, bool) {
	switch b.Type {
	case provider.Text:
		if b.Text == "" {
			return anthropic.ContentBlockParamUnion{}, false
		}
		return anthropic.NewTextBlock(b.Text), true
	case provider.Image:
		if note, bad := imageNote(b); bad {
			return anthropic.NewTextBlock(note), true
		}
		return anthropic.NewImageBlockBase64(b.MIMEType, base64.StdEncoding.EncodeToString(b.Data)), true
	case provider.ToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{
			ID: b.ID, Name: b.Name, Input: input,
		}}, true
	case provider.ToolResult:
		r := &anthropic.ToolResultBlockParam{ToolUseID: b.ToolUseID}
		if b.IsError {
			r.IsError = param.NewOpt(true)
		}
		for _, c := range b.Content {
			switch c.Type {
			case provider.Text:
				if c.Text != "" {
					r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: c.Text}})
				}
			case provider.Image:
				if note, bad := imageNote(c); bad {
					r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: note}})
					continue
				}
				r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: &anthropic.ImageBlockParam{
					Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
						Data: base64.StdEncoding.EncodeToString(c.Data), MediaType: anthropic.Base64ImageSourceMediaType(c.MIMEType),
					}},
				}})
			}
		}
		return anthropic.ContentBlockParamUnion{OfToolResult: r}, true
	case provider.Opaque:
		if b.Provider != "anthropic" || len(b.Raw) == 0 {
			return anthropic.ContentBlockParamUnion{}, false
		}
		return param.Override[anthropic.ContentBlockParamUnion](b.Raw), true
	}
	return anthropic.ContentBlockParamUnion{}, false
}

// imageNote reports whether an image cannot be sent, and the text note
// that replaces it.
func imageNote(b provider.Block) (string, bool) {
	n := base64.StdEncoding.EncodedLen(len(b.Data))
	switch {
	case !imageTypes[b.MIMEType]:
		return fmt.Sprintf("[image omitted: type %q is not one Anthropic accepts (JPEG, PNG, GIF, WebP); %s]", b.MIMEType, size(len(b.Data))), true
	case n > MaxImageBase64:
		return fmt.Sprintf("[image omitted: %s is %s, %s as base64, over Anthropic's 5 MB per-image limit; downscale or crop it and read it again]",
			b.MIMEType, size(len(b.Data)), size(n)), true
	}
	return "", false
}

func size(n int) string {
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// ErrImageRejected is wrapped by *ImageError.
var ErrImageRejected = errors.New("anthropicmodel: the API rejected an image")

// ImageError reports a 400 from the API about an image (case BH-013). The
// indices locate the image in the Request.Messages that was sent: Message
// and Block, and Content inside a tool_result (-1 when the image is the
// block itself). Message is -1 when the API did not say which image.
type ImageError struct {
	Message, Block, Content int
	Status                  int    // HTTP status
	Reason                  string // the API's message
	Err                     error  // the SDK's *anthropic.Error
}

func (e *ImageError) Error() string {
	if e.Message < 0 {
		return fmt.Sprintf("anthropicmodel: image rejected (%d): %s", e.Status, e.Reason)
	}
	return fmt.Sprintf("anthropicmodel: image at message %d block %d rejected (%d): %s", e.Message, e.Block, e.Status, e.Reason)
}

// Unwrap returns ErrImageRejected and the SDK error.
func (e *ImageError) Unwrap() []error { return []error{ErrImageRejected, e.Err} }

// Replace returns a copy of msgs with the rejected image (every image when
// the API did not say which) swapped for a text note quoting the API, so
// the next request succeeds instead of repeating the same 400. The blocks
// of msgs are not modified.
func (e *ImageError) Replace(msgs []provider.Message) []provider.Message {
	note := provider.Block{Type: provider.Text, Text: "[image removed after the API rejected it: " + e.Reason + "]"}
	out := make([]provider.Message, len(msgs))
	for i, m := range msgs {
		out[i] = provider.Message{Role: m.Role, Blocks: append([]provider.Block(nil), m.Blocks...)}
		for j := range out[i].Blocks {
			b := &out[i].Blocks[j]
			hit := e.Message < 0 || (e.Message == i && e.Block == j)
			if !hit {
				continue
			}
			if b.Type == provider.Image && (e.Content < 0 || e.Message < 0) {
				*b = note
				continue
			}
			if b.Type == provider.ToolResult {
				c := append([]provider.Block(nil), b.Content...)
				for k := range c {
					if c[k].Type == provider.Image && (e.Message < 0 || e.Content < 0 || e.Content == k) {
						c[k] = note
					}
				}
				b.Content = c
			}
		}
	}
	return out
}

// imagePath finds "messages.N.content.M[.content.K]" in an API error.
var imagePath = regexp.MustCompile(`messages\.(\d+)\.content\.(\d+)(?:\.content\.(\d+))?`)

// classify turns a refusal of a prompt too long for the context window
// (400 "prompt is too long", 413 request_too_large) into a
// *provider.OverflowError and a 400 about an image into an *ImageError;
// other errors are returned as they are.
func classify(err error, origins [][]origin) error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return err
	}
	reason := apiErr.Message
	if reason == "" {
		reason = apiErr.Error()
	}
	if provider.IsOverflow(apiErr.StatusCode, "", reason) {
		return &provider.OverflowError{Provider: "anthropic", Status: apiErr.StatusCode, Reason: reason, Err: err}
	}
	if apiErr.StatusCode != 400 {
		return err
	}
	if !strings.Contains(strings.ToLower(reason), "image") {
		return err
	}
	ie := &ImageError{Message: -1, Block: -1, Content: -1, Status: apiErr.StatusCode, Reason: reason, Err: err}
	if m := imagePath.FindStringSubmatch(reason); m != nil {
		mi, _ := strconv.Atoi(m[1])
		bi, _ := strconv.Atoi(m[2])
		if mi < len(origins) && bi < len(origins[mi]) && origins[mi][bi].msg >= 0 {
			o := origins[mi][bi]
			ie.Message, ie.Block = o.msg, o.block
			if m[3] != "" {
				ie.Content, _ = strconv.Atoi(m[3])
			}
		}
	}
	return ie
}

var _ provider.ImageRejection = (*ImageError)(nil)
