package provider_test

import (
	"testing"

	"github.com/aibuddy/aibuddy/provider"
)

func TestChooseStrategy(t *testing.T) {
	type R = provider.Route
	cases := []struct {
		route provider.Route
		want  provider.Strategy
	}{
		// Anthropic, official endpoint: the documented allowlist.
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-opus-4-5", BaseURL: "https://api.anthropic.com"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-6"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-opus-4-6"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-opus-4-7"}, provider.Native},
		{R{Provider: "anthropic", Model: "Claude-Opus-5"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-sonnet-5-5"}, provider.Native},
		// Dated snapshots of allowed aliases.
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929"}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-opus-4-5-20251101"}, provider.Native},
		// Older models: no tool search tool (a 400 if it were sent).
		{R{Provider: "anthropic", Model: "claude-3-haiku-20240307"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-3-opus-20240229"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-3-5-sonnet-20241022"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-3-5-sonnet-latest"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-3-7-sonnet-20250219"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-20250514"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-opus-4-1-20250805"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-opus-4"}, provider.ActiveTools},
		// Near misses of allowed names.
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5-thinking"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-50"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5-2025"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: ""}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-next-7"}, provider.ActiveTools},
		// Haiku: activeTools by the seed, even where the API has the tool.
		{R{Provider: "anthropic", Model: "claude-haiku-4-5"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-haiku-4-5-20251001"}, provider.ActiveTools},
		// Not the official endpoint.
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "https://gateway.example.com"}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "http://api.anthropic.com"}, provider.ActiveTools},

		// OpenAI Responses API, BYOK on the official endpoint: gpt-5.4 and later.
		{R{Provider: "openai", Model: "gpt-5.4", BYOK: true}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.4-mini", BYOK: true}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.4-pro", BYOK: true, BaseURL: "https://api.openai.com/v1"}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.4-2026-03-05", BYOK: true}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.5", BYOK: true}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.5-2026-04-23", BYOK: true}, provider.Native},
		// Older OpenAI models.
		{R{Provider: "openai", Model: "gpt-5", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5-2025-08-07", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.1", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.2-pro", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.3-codex", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-4o", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-4.1-2025-04-14", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "o3", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.45", BYOK: true}, provider.ActiveTools},
		{R{Provider: "openai", Model: "", BYOK: true}, provider.ActiveTools},
		// Platform gateway and proxies.
		{R{Provider: "openai", Model: "gpt-5.4", BYOK: false}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.4", BYOK: true, BaseURL: "https://proxy.example.com/v1"}, provider.ActiveTools},
		{R{Provider: "openai-chat", Model: "llama3", BaseURL: "http://127.0.0.1:11434/v1"}, provider.ActiveTools},
		{R{Provider: "other", Model: "x"}, provider.ActiveTools},

		// The override: "on" opens the native path to any model and endpoint
		// of the two providers that have one; "off" closes it; "auto" is the
		// allowlist.
		{R{Provider: "anthropic", Model: "claude-next-7", NativeToolSearch: provider.NativeOn}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-haiku-4-5", NativeToolSearch: provider.NativeOn}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: "https://gateway.example.com", NativeToolSearch: provider.NativeOn}, provider.Native},
		{R{Provider: "openai", Model: "gpt-6", BYOK: true, NativeToolSearch: provider.NativeOn}, provider.Native},
		{R{Provider: "openai", Model: "gpt-5.4", BYOK: false, NativeToolSearch: provider.NativeOn}, provider.Native},
		{R{Provider: "openai-chat", Model: "llama3", NativeToolSearch: provider.NativeOn}, provider.ActiveTools},
		{R{Provider: "other", Model: "x", NativeToolSearch: provider.NativeOn}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5", NativeToolSearch: provider.NativeOff}, provider.ActiveTools},
		{R{Provider: "openai", Model: "gpt-5.4", BYOK: true, NativeToolSearch: provider.NativeOff}, provider.ActiveTools},
		{R{Provider: "anthropic", Model: "claude-sonnet-4-5", NativeToolSearch: provider.NativeAuto}, provider.Native},
		{R{Provider: "anthropic", Model: "claude-3-7-sonnet-latest", NativeToolSearch: provider.NativeAuto}, provider.ActiveTools},
	}
	for _, c := range cases {
		if got := provider.ChooseStrategy(c.route); got != c.want {
			t.Errorf("%+v: %s, want %s", c.route, got, c.want)
		}
	}
}

func TestParseNativeToolSearch(t *testing.T) {
	for in, want := range map[string]provider.NativeToolSearch{
		"": provider.NativeAuto, "auto": provider.NativeAuto, "On": provider.NativeOn, " off ": provider.NativeOff,
	} {
		if got, err := provider.ParseNativeToolSearch(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"yes", "true", "native"} {
		if got, err := provider.ParseNativeToolSearch(in); err == nil {
			t.Errorf("%q: %q, want an error", in, got)
		}
	}
}
