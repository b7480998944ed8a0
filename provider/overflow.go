package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrContextOverflow is wrapped by every [OverflowError]: the API refused a
// request because its prompt does not fit the model's context window.
var ErrContextOverflow = errors.New("the prompt does not fit the model's context window")

// OverflowError is what an adapter returns when the API refused a request
// as too long for the model's context window (Anthropic: 400
// invalid_request_error "prompt is too long: N tokens > M maximum", or 413
// request_too_large; OpenAI: error code "context_length_exceeded"). It is a
// request-building failure, not a model failure: the same request will be
// refused again, a shorter transcript ([Fit]) will not. errors.Is(err,
// ErrContextOverflow) holds; Err is the SDK's error.
type OverflowError struct {
	Provider string // "anthropic", "openai", "openai-chat"
	Status   int    // HTTP status; 0 when the refusal came inside a stream
	Reason   string // the API's message
	Err      error
}

func (e *OverflowError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: context overflow: %s", e.Provider, e.Reason)
	}
	return fmt.Sprintf("%s: context overflow (%d): %s", e.Provider, e.Status, e.Reason)
}

// Unwrap returns ErrContextOverflow and the SDK error.
func (e *OverflowError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrContextOverflow}
	}
	return []error{ErrContextOverflow, e.Err}
}

// overflowWords are the phrases APIs use for a prompt longer than the
// context window: Anthropic ("prompt is too long"), OpenAI (code and
// message "context_length_exceeded", "maximum context length is N
// tokens"), and compatible servers (vLLM "maximum context length",
// llama.cpp "exceeds the available context size", others "context window").
var overflowWords = []string{
	"prompt is too long",
	"context_length_exceeded",
	"maximum context length",
	"context length exceeded",
	"exceeds the context window",
	"exceeds the available context size",
	"input is too long",
}

// IsOverflow reports whether an API refusal with this HTTP status (0 for a
// refusal inside a stream), error code and message says the prompt does
// not fit the context window. Only 400 (and 413, request too large) and 0
// qualify: a 429 "too many tokens per minute" is a rate limit, not an
// overflow.
func IsOverflow(status int, code, message string) bool {
	switch status {
	case 0, http.StatusBadRequest:
	case http.StatusRequestEntityTooLarge:
		return true
	default:
		return false
	}
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(message)
	for _, w := range overflowWords {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}
