package config_test

import (
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
)

func TestWebSettings(t *testing.T) {
	c, err := config.Parse([]byte(`{"approval":{"via":"both"},"web":{"eventBuffer":8,"sessionTTL":"1h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Web.Resolved()
	if c.Approval.Via != "both" || w.EventBuffer != 8 || w.SessionTTL.D().Hours() != 1 || w.PageChars != config.DefaultWebPageChars {
		t.Fatalf("%+v %+v", c.Approval, w)
	}
	for doc, want := range map[string]string{
		`{"approval":{"via":"browser"}}`: `approval.via is "browser"`,
		`{"web":{"pageChars":-1}}`:       "web.pageChars is negative",
	} {
		if _, err := config.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
