package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
)

// The pass-through keys of `aibuddy mcp`: mcp.passthroughNames takes
// "auto" or "prefixed"; mcp.passthroughMaxBlobBytes is a non-negative
// byte count.
func TestPassthroughKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"mcp": {"passthroughNames": "prefixed", "passthroughMaxBlobBytes": 1024}}`))
	if err != nil || c.MCP.PassthroughNames != "prefixed" || c.MCP.PassthroughMaxBlobBytes != 1024 {
		t.Fatalf("parse: %v %+v", err, c)
	}
	for doc, want := range map[string]string{
		`{"mcp": {"passthroughNames": "always"}}`:  `mcp.passthroughNames is "always": use "auto" (the default) or "prefixed"`,
		`{"mcp": {"passthroughMaxBlobBytes": -1}}`: `negative values for mcp.passthroughMaxBlobBytes`,
	} {
		_, err := config.Parse([]byte(doc))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", doc, err, want)
		}
	}
}
