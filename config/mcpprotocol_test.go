package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
)

// mcp.maxInputRounds and mcp.protocolVersion: decoded, and refused with
// the key named when out of range.
func TestMCPProtocolKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"mcp": {"maxInputRounds": 2, "protocolVersion": "2025-06-18"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.MaxInputRounds != 2 || c.MCP.ProtocolVersion != "2025-06-18" {
		t.Errorf("decoded %+v", c.MCP)
	}
	for in, want := range map[string]string{
		`{"mcp": {"maxInputRounds": -1}}`:            "negative values for mcp.maxInputRounds",
		`{"mcp": {"protocolVersion": "2099-01-01"}}`: `mcp.protocolVersion: "2099-01-01" is not an MCP protocol version`,
	} {
		_, err := config.Parse([]byte(in))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
