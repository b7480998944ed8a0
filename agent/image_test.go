package agent_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"iter"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/agent"
	"github.com/aibuddy/aibuddy/provider"
)

// refusal is what an adapter returns when the API refuses an image
// (anthropicmodel.ImageError is one): Replace swaps every image for a note.
type refusal struct{}

func (refusal) Error() string { return "400: image exceeds 5 MB maximum" }
func (refusal) Replace(msgs []provider.Message) []provider.Message {
	note := func(b provider.Block) provider.Block {
		return provider.Block{Type: provider.Text, Text: "[image removed: the provider refused it]"}
	}
	out := make([]provider.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Blocks = nil
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.Image:
				b = note(b)
			case provider.ToolResult:
				var content []provider.Block
				for _, c := range b.Content {
					if c.Type == provider.Image {
						c = note(c)
					}
					content = append(content, c)
				}
				b.Content = content
			}
			out[i].Blocks = append(out[i].Blocks, b)
		}
	}
	return out
}

// refusing wraps the scripted model (a test double of the MODEL only) and
// answers any request that still carries an image with the refusal, as the
// provider's API does (case BH-013).
type refusing struct {
	*scripted
	refused int
}

func hasImage(msgs []provider.Message) bool {
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == provider.Image {
				return true
			}
			for _, c := range b.Content {
				if c.Type == provider.Image {
					return true
				}
			}
		}
	}
	return false
}

func (m *refusing) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	if hasImage(req.Messages) {
		m.refused++
		return func(yield func(provider.Event, error) bool) { yield(provider.Event{}, refusal{}) }
	}
	return m.scripted.Stream(ctx, req)
}

// BH-013 step 3: when the provider refuses an image that read_file put in
// the transcript, the image becomes a text note in the stored history and
// the next turn succeeds instead of looping on the same 400.
func TestRefusedImageBecomesANoteAndTheRunGoesOn(t *testing.T) {
	ws := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "shot.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	set := newSet(t, ws, nil, nil)
	m := &refusing{scripted: &scripted{turns: []func(*provider.Request) []provider.Block{
		static(use("r1", "read_file", `{"path":"shot.png"}`)),
		static(say("The screenshot could not be shown; continuing without it.")),
		static(say("Done.")),
	}}}
	_, sum, err := drain(t, agent.New(agent.Options{Model: m, Set: set}).Run(context.Background(), "look at shot.png"), time.Minute, nil)
	if err != nil || sum.Stop != agent.StopEndTurn {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	if m.refused != 1 {
		t.Errorf("refused %d requests, want exactly 1 (then the image is gone from the history)", m.refused)
	}
	if hasImage(sum.Transcript) {
		t.Error("the stored transcript still holds the refused image")
	}
	if !bytes.Contains([]byte(allText(sum.Transcript)), []byte("[image removed: the provider refused it]")) {
		t.Error("the stored transcript lacks the note that replaced the image")
	}
}
