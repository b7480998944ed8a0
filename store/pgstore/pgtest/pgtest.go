package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables scripts/test sets.
const (
	EnvURL     = "AIBUDDY_TEST_PG_URL" // the throwaway server's URL
	EnvRequire = "AIBUDDY_REQUIRE_PG"  // "1": a missing URL fails the test
)

// URL returns the test server's URL. Without one it fails the test when
// AIBUDDY_REQUIRE_PG is "1" and skips it otherwise, saying how to get one.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u != "" {
		return u
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is not set but %s=1: this run must test PostgreSQL; start one with scripts/pgtemp.sh (scripts/test does)", EnvURL, EnvRequire)
	}
	t.Skipf("no PostgreSQL: set %s (scripts/test starts a throwaway server; source scripts/pgtemp.sh && pgtemp_start)", EnvURL)
	return ""
}

// SchemaFor is the schema name that key maps to: "t_" and 24 hex digits
// of key's SHA-256, so a test and the child processes it starts (which
// know the key, such as a file path) agree on it.
func SchemaFor(key string) string {
	h := sha256.Sum256([]byte(key))
	return "t_" + hex.EncodeToString(h[:12])
}

// Schema returns the schema for key (see [SchemaFor]) and drops it, with
// everything in it, when t ends.
func Schema(t testing.TB, url, key string) string {
	t.Helper()
	name := SchemaFor(key)
	t.Cleanup(func() { Drop(t, url, name) })
	return name
}

// Drop removes the schema name and everything in it, if it exists.
func Drop(t testing.TB, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("pgtest: drop schema %s: %v", name, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", name, err)
	}
}
