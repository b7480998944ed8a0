package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
)

// TestProviderSchemaDialectKeys: provider.openaiStrict, schemaDialect and
// schemaRefDepth decode and are checked.
func TestProviderSchemaDialectKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"provider": {"openaiStrict": "exact", "schemaDialect": "gemini", "schemaRefDepth": 5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Provider; p.OpenAIStrict != "exact" || p.SchemaDialect != "gemini" || p.SchemaRefDepth != 5 {
		t.Errorf("decoded %+v", p)
	}
	for doc, want := range map[string]string{
		`{"provider": {"openaiStrict": "always"}}`:  `provider.openaiStrict: "always" (want auto, exact or off)`,
		`{"provider": {"schemaDialect": "vertex"}}`: `provider.schemaDialect: "vertex" (want auto, openai or gemini)`,
		`{"provider": {"schemaRefDepth": -1}}`:      `provider.schemaRefDepth`,
	} {
		if _, err := config.Parse([]byte(doc)); !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", doc, err, want)
		}
	}
}
