package mcpserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/capability"
	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/registry"
)

// samplerFor connects a host (protocol version, sampling handler or nil)
// to a fresh gateway over in-memory transports and returns the gateway's
// Sampler, after one request.
func samplerFor(t *testing.T, version string, handler func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)) (mcpserver.Sampler, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	set, _, err := capability.Resolve(registry.New(nil, nil, nil), capability.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	gw := mcpserver.NewGateway(set, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gw.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: handler}).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return mcpserver.Sampler{Gateway: gw, Preferences: mcpserver.DefaultSamplingPreferences("haiku")}, cs
}

func summaryRequest() *compact.SummaryRequest {
	return &compact.SummaryRequest{System: compact.SummarySystem, Prompt: "Summarize this.", MaxTokens: 100}
}

// The request carries the system prompt, the prompt, max tokens, no
// context and the model hint; a host's failure, a non-text answer and a
// cancelled context are errors (not ErrUnavailable: the result is trimmed
// with the failure as the reason).
func TestSamplerRequestAndFailures(t *testing.T) {
	var got *mcp.CreateMessageParams
	answer := func(res *mcp.CreateMessageResult, err error) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			got = req.Params
			return res, err
		}
	}
	s, _ := samplerFor(t, "2025-11-25", answer(&mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "short"}}, nil))
	sum, err := s.Summarize(context.Background(), summaryRequest())
	if err != nil || sum.Text != "short" || sum.Model != "m1" || sum.Via != mcpserver.SamplingVia {
		t.Fatalf("%+v %v", sum, err)
	}
	if got.SystemPrompt != compact.SummarySystem || got.MaxTokens != 100 || got.IncludeContext != "none" ||
		len(got.ModelPreferences.Hints) != 1 || got.ModelPreferences.Hints[0].Name != "haiku" || got.ModelPreferences.CostPriority < 0.5 {
		t.Errorf("params %+v", got)
	}

	for name, c := range map[string]struct {
		res  *mcp.CreateMessageResult
		err  error
		want string
	}{
		"refused": {nil, errors.New("the user declined"), "the user declined"},
		"image":   {&mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}, nil, "want text"},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := samplerFor(t, "2025-11-25", answer(c.res, c.err))
			_, err := s.Summarize(context.Background(), summaryRequest())
			if err == nil || errors.Is(err, compact.ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error naming %q", err, c.want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		entered := make(chan struct{})
		s, _ := samplerFor(t, "2025-11-25", func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := s.Summarize(ctx, summaryRequest())
			errc <- err
		}()
		<-entered
		cancel()
		if err := <-errc; err == nil || errors.Is(err, compact.ErrUnavailable) {
			t.Errorf("%v, want the cancellation", err)
		}
	})
}

// A host that cannot be asked: the error wraps compact.ErrUnavailable and
// says why.
func TestSamplerUnavailable(t *testing.T) {
	handler := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		t.Error("the host was asked")
		return nil, errors.New("no")
	}
	for _, c := range []struct {
		name, version string
		sampling      bool
		want          string
	}{
		{"no capability", "2025-11-25", false, "did not declare the sampling capability"},
		{"2026-07-28", "2026-07-28", true, "speaks protocol 2026-07-28"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := handler
			if !c.sampling {
				h = nil
			}
			s, _ := samplerFor(t, c.version, h)
			_, err := s.Summarize(context.Background(), summaryRequest())
			if !errors.Is(err, compact.ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want unavailable: %q", err, c.want)
			}
		})
	}
	if _, err := (mcpserver.Sampler{}).Summarize(context.Background(), summaryRequest()); !errors.Is(err, compact.ErrUnavailable) {
		t.Errorf("no gateway: %v", err)
	}
}
