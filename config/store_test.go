package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStoreSettings(t *testing.T) {
	c, err := Parse([]byte(`{"store": {"url": "postgres://aibuddy@db:5432/tools", "schema": "team_a", "maxConns": 16, "sweepInterval": "30s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.URL != "postgres://aibuddy@db:5432/tools" || c.Store.Schema != "team_a" || c.Store.MaxConns != 16 || c.Store.SweepInterval.D() != 30*time.Second {
		t.Errorf("store settings = %+v", c.Store)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := c.StoreURL(getenv); got != "postgres://aibuddy@db:5432/tools" {
		t.Errorf("StoreURL without the variable = %q", got)
	}
	env[EnvStoreURL] = "postgresql://other/db"
	if got := c.StoreURL(getenv); got != "postgresql://other/db" {
		t.Errorf("StoreURL with %s = %q, want the variable's value", EnvStoreURL, got)
	}
	for doc, want := range map[string]string{
		`{"store": {"url": "mysql://u:hunter2@h/db"}}`: "store.url",
		`{"store": {"maxConns": -1}}`:                  "store.maxConns",
		`{"store": {"URL": "postgres://x"}}`:           "case-sensitive",
	} {
		_, err := Parse([]byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%s) = %v; want ErrInvalid naming %s, without the password", doc, err, want)
		}
	}
}
