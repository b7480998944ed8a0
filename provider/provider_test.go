package provider_test

import (
	"testing"

	"github.com/aibuddy/aibuddy/provider"
)

func TestChooseStrategy(t *testing.T) {
	cases := []struct {
		route provider.Route
		want  provider.Strategy
	}{
		{provider.Route{Provider: "anthropic", Model: "claude-sonnet-4-5"}, provider.Native},
		{provider.Route{Provider: "anthropic", Model: "claude-opus-4-5", BaseURL: "https://api.anthropic.com"}, provider.Native},
		{provider.Route{Provider: "anthropic", Model: "claude-haiku-4-5"}, provider.ActiveTools},
		{provider.Route{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "https://gateway.example.com"}, provider.ActiveTools},
		{provider.Route{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "http://api.anthropic.com"}, provider.ActiveTools},
		{provider.Route{Provider: "openai", Model: "gpt-5", BYOK: true}, provider.Native},
		{provider.Route{Provider: "openai", Model: "gpt-5", BYOK: false}, provider.ActiveTools},
		{provider.Route{Provider: "openai", Model: "gpt-5", BYOK: true, BaseURL: "https://proxy.example.com/v1"}, provider.ActiveTools},
		{provider.Route{Provider: "openai-chat", Model: "llama3", BaseURL: "http://127.0.0.1:11434/v1"}, provider.ActiveTools},
		{provider.Route{Provider: "other", Model: "x"}, provider.ActiveTools},
	}
	for _, c := range cases {
		if got := provider.ChooseStrategy(c.route); got != c.want {
			t.Errorf("%+v: %s, want %s", c.route, got, c.want)
		}
	}
}
