package chatmodel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/aibuddy/aibuddy/provider"
)

// Options configure a Model.
type Options struct {
	// APIKey is the bearer key. Default: $OPENAI_API_KEY (a local server
	// usually ignores it).
	APIKey string
	// BaseURL is the API root, e.g. "http://127.0.0.1:11434/v1/".
	// Default: $OPENAI_BASE_URL, else OpenAI's endpoint.
	BaseURL string
	// Model is the model id (e.g. "llama3"); Request.Model overrides it.
	Model string
	// MaxTokens bounds output tokens (max_tokens) when Request.MaxTokens is
	// 0. Default 0: not sent, the server's own limit.
	MaxTokens int
	// HTTPClient sends the requests. Default: the SDK's client.
	HTTPClient *http.Client
	// Logger receives warnings about tool schemas projected with loss
	// (case BH-031), once per tool and schema. Default: discard.
	Logger *slog.Logger
	// MaxRetries is how often the SDK retries a failed request before the
	// stream starts. nil means the SDK's default (2).
	MaxRetries *int
	// NewID names a streamed tool call the server sent without an id.
	// Default: "call_" and 24 random hex digits.
	NewID func() string
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that reject it. Usage is then zero.
	NoStreamUsage bool
	// Dialect is the schema subset tool parameters are projected into
	// (settings key provider.schemaDialect): provider.DialectAuto (default,
	// ""; Gemini's subset for Gemini's OpenAI-compatible endpoint, found by
	// BaseURL), DialectOpenAI or DialectGemini.
	Dialect provider.SchemaDialect
	// RefDepth is, in the Gemini dialect, how many times a recursive $ref
	// is expanded inside itself before the rest is cut off with a note
	// (settings key provider.schemaRefDepth). 0 means
	// toolschema.DefaultGeminiRefDepth (3).
	RefDepth int
}

// Model is a route to a chat-completions compatible endpoint. It
// implements provider.Model; it is safe for concurrent use.
type Model struct {
	client  openai.Client
	model   string
	maxTok  int
	newID   func() string
	noUsage bool
	proj    *projector
}

var (
	_ provider.Model           = (*Model)(nil)
	_ provider.SchemaExplainer = (*Model)(nil)
)

// New returns a Model for opts.
func New(opts Options) *Model {
	key := opts.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	base := opts.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL")
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
	newID := opts.NewID
	if newID == nil {
		newID = randomID
	}
	return &Model{client: openai.NewClient(ropts...), model: opts.Model, maxTok: opts.MaxTokens,
		newID: newID, noUsage: opts.NoStreamUsage,
		proj: &projector{log: log, dialect: provider.ResolveDialect(opts.Dialect, base), refDepth: opts.RefDepth}}
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// Strategy is always provider.ActiveTools: compatible endpoints have no
// tool search of their own.
func (m *Model) Strategy() provider.Strategy { return provider.ActiveTools }

// ErrIncomplete is returned when the stream ends without a finish_reason
// (the connection dropped, or the server stopped early).
var ErrIncomplete = errors.New("chatmodel: stream ended without a finish_reason")

// Stream sends req with stream: true and yields text deltas, each complete
// tool call as a provider.EventToolUse once the stream ends, and one
// provider.EventDone with the assistant message and usage.
//
// Errors: a request the server refuses is an *openai.Error (errors.As),
// wrapped in a *provider.OverflowError when the prompt is too long for the
// context window (code context_length_exceeded, or a compatible server's
// "maximum context length" message); a stream that ends early wraps
// ErrIncomplete; ctx ending stops the stream with ctx.Err().
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(provider.Event{}, err)
			return
		}
		stream := m.client.Chat.Completions.NewStreaming(ctx, params)
		defer stream.Close()
		acc := accumulator{newID: m.newID}
		for stream.Next() {
			if err := ctx.Err(); err != nil {
				yield(provider.Event{}, err)
				return
			}
			for _, ev := range acc.add(stream.Current()) {
				if !yield(ev, nil) {
					return
				}
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
		evs, err := acc.finish()
		if err != nil {
			yield(provider.Event{}, err)
			return
		}
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// classify turns a refusal of a prompt too long for the context window
// into a *provider.OverflowError; other errors are returned as they are.
func classify(err error) error {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return err
	}
	reason := apiErr.Message
	if reason == "" {
		reason = apiErr.RawJSON()
	}
	if provider.IsOverflow(apiErr.StatusCode, apiErr.Code, reason) {
		return &provider.OverflowError{Provider: "openai-chat", Status: apiErr.StatusCode, Reason: reason, Err: err}
	}
	return err
}
