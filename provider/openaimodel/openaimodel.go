package openaimodel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/aibuddy/aibuddy/provider"
)

// ProviderName is the provider.Route.Provider of this adapter and the
// provider.Block.Provider of the blocks it keeps.
const ProviderName = "openai"

// Options configure a Model. The zero value reads the key and base URL
// from the environment.
type Options struct {
	// APIKey is the bearer key. Default: $OPENAI_API_KEY.
	APIKey string
	// BaseURL is the API root, e.g. "https://api.openai.com/v1/".
	// Default: $OPENAI_BASE_URL, else the official endpoint.
	BaseURL string
	// Model is the model id (e.g. "gpt-5"); Request.Model overrides it.
	Model string
	// MaxTokens bounds output tokens (max_output_tokens) when
	// Request.MaxTokens is 0. Default 0: not sent, the model's own limit.
	MaxTokens int
	// HTTPClient sends the requests. Default: the SDK's client.
	HTTPClient *http.Client
	// BYOK says the key is the user's own against OpenAI (not a platform
	// gateway holding the key). nil means true: a key given here or in
	// $OPENAI_API_KEY is taken as the user's own. Set it to false for a
	// platform gateway.
	BYOK *bool
	// Strategy overrides the route's deferral strategy. Default ("") is
	// provider.ChooseStrategy for {Provider: "openai", Model, BaseURL, BYOK}.
	Strategy provider.Strategy
	// Logger receives warnings about tool schemas projected with loss
	// (toolschema notes, case BH-031), once per tool and schema. Default:
	// discard.
	Logger *slog.Logger
	// MaxRetries is how often the SDK retries a failed request (429, 5xx,
	// connection errors) before the stream starts. nil means the SDK's
	// default (2).
	MaxRetries *int
	// Strict says when a function tool goes "strict": true (settings key
	// provider.openaiStrict): provider.StrictAuto (default, ""), StrictExact
	// or StrictOff; see provider.StrictMode and case BH-093.
	Strict provider.StrictMode
}

// Model is a route to the OpenAI Responses API (POST {BaseURL}/responses,
// streamed). It implements provider.Model; it is safe for concurrent use.
type Model struct {
	client   openai.Client
	model    string
	maxTok   int
	strategy provider.Strategy
	proj     *projector
}

var (
	_ provider.Model           = (*Model)(nil)
	_ provider.SchemaExplainer = (*Model)(nil)
)

// New returns a Model for opts (nil-safe: the zero Options read the
// environment).
func New(opts Options) *Model {
	key := opts.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	base := opts.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	byok := opts.BYOK == nil || *opts.BYOK
	strategy := opts.Strategy
	if strategy == "" {
		strategy = provider.ChooseStrategy(provider.Route{Provider: ProviderName, Model: opts.Model, BaseURL: base, BYOK: byok})
	}
	ropts := []option.RequestOption{option.WithAPIKey(key)}
	if base != "" {
		ropts = append(ropts, option.WithBaseURL(base))
	}
	if opts.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(opts.HTTPClient))
	}
	if opts.MaxRetries != nil {
		ropts = append(ropts, option.WithMaxRetries(*opts.MaxRetries))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Model{client: openai.NewClient(ropts...), model: opts.Model, maxTok: opts.MaxTokens, strategy: strategy,
		proj: &projector{log: log, mode: opts.Strict}}
}

// Strategy reports how this route presents deferred tools: provider.Native
// (one stable tools array, deferred functions marked defer_loading and the
// hosted tool_search tool added) or provider.ActiveTools (only the
// non-deferred tools are sent).
func (m *Model) Strategy() provider.Strategy { return m.strategy }

// ErrResponse is wrapped by the errors for a response that failed after
// the stream started (a response.failed or error event); the message
// carries the provider's code and text.
var ErrResponse = errors.New("openaimodel: response failed")

// Stream sends req to the Responses API with stream: true and yields text
// deltas, each complete function call as a provider.EventToolUse, and one
// provider.EventDone carrying the whole assistant message (reasoning, tool
// search and other items kept as provider.Opaque with Raw verbatim).
//
// Before sending, the transcript's tool pairing is repaired (see the
// package doc, cases BH-051 and BH-054). Errors: a request the API refuses
// is an *openai.Error (errors.As); a response that fails mid-stream wraps
// ErrResponse; a prompt too long for the context window (code
// context_length_exceeded, before or inside the stream) is a
// *provider.OverflowError wrapping either; ctx ending stops the stream
// with ctx.Err().
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		params, restore, err := m.params(req)
		if err != nil {
			yield(provider.Event{}, err)
			return
		}
		stream := m.client.Responses.NewStreaming(ctx, params)
		defer stream.Close()
		acc := accumulator{restore: restore}
		for stream.Next() {
			if err := ctx.Err(); err != nil {
				yield(provider.Event{}, err)
				return
			}
			evs, done, err := acc.add(stream.Current())
			if err != nil {
				yield(provider.Event{}, classify(err))
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
			if done {
				return
			}
		}
		if err := stream.Err(); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(provider.Event{}, classify(err))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(provider.Event{}, err)
			return
		}
		yield(provider.Event{}, fmt.Errorf("%w: stream ended before response.completed", ErrResponse))
	}
}

// classify turns a refusal of a prompt too long for the context window
// into a *provider.OverflowError; other errors are returned as they are.
func classify(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		if provider.IsOverflow(apiErr.StatusCode, apiErr.Code, apiErr.Message) {
			return &provider.OverflowError{Provider: "openai", Status: apiErr.StatusCode, Reason: apiErr.Message, Err: err}
		}
		return err
	}
	if errors.Is(err, ErrResponse) && provider.IsOverflow(0, "", err.Error()) {
		return &provider.OverflowError{Provider: "openai", Reason: err.Error(), Err: err}
	}
	return err
}
