package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
)

func TestCompactionViewAndWorkerKeys(t *testing.T) {
	c, err := config.Parse([]byte(`{"compaction": {"workers": 4, "viewMaxChars": 500, "viewMaxTokens": 300, "viewMaxJSONBytes": 1048576}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cc := c.Compaction; cc.Workers != 4 || cc.ViewMaxChars != 500 || cc.ViewMaxTokens != 300 || cc.ViewMaxJSONBytes != 1<<20 {
		t.Fatalf("decoded %+v", cc)
	}
	for _, k := range []string{"workers", "viewMaxChars", "viewMaxTokens", "viewMaxJSONBytes"} {
		_, err := config.Parse([]byte(`{"compaction": {"` + k + `": -1}}`))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "negative values for compaction."+k) {
			t.Errorf("%s: %v", k, err)
		}
	}
}
