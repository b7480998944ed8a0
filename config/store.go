package config

import (
	"fmt"
	"strings"
)

// EnvStoreURL names the environment variable that, when set, is the
// store's URL in place of store.url (so a password stays out of the
// settings file).
const EnvStoreURL = "AIBUDDY_STORE_URL"

// StoreSettings configures where the call records, their payloads
// (offloaded calls, full command output, job logs) and the background
// jobs live. Zero means the default given.
type StoreSettings struct {
	// URL is "" (default: the embedded SQLite file records.db in the data
	// folder, tuned by records.*) or a PostgreSQL connection string,
	// "postgres://user@host:5432/db?sslmode=verify-full" (pgx syntax;
	// "postgresql://" too), which several aibuddy processes (replicas) can
	// share. AIBUDDY_STORE_URL, when set, takes its place.
	URL string `json:"url,omitempty"`
	// Schema is the PostgreSQL schema of the tables (created when
	// missing). Default "aibuddy".
	Schema string `json:"schema,omitempty"`
	// MaxConns is the most PostgreSQL connections of one process's pool
	// (one more holds its owner lock). Count; default 8.
	MaxConns int `json:"maxConns,omitempty"`
	// SweepInterval is how often a process sharing PostgreSQL marks the
	// calls left running by processes that are gone as interrupted
	// (besides at start). Duration; default "1m"; "-1s" or any negative:
	// only at start.
	SweepInterval Duration `json:"sweepInterval,omitempty"`
}

// StoreURL is the store URL in effect: AIBUDDY_STORE_URL when getenv gives
// it, else store.url.
func (c *Config) StoreURL(getenv func(string) string) string {
	if u := getenv(EnvStoreURL); u != "" {
		return u
	}
	return c.Store.URL
}

// validate checks the store settings; the error names the key and what
// to write instead.
func (s StoreSettings) validate() error {
	if s.URL != "" && !IsPostgresURL(s.URL) {
		return fmt.Errorf("store.url: %q is not a PostgreSQL URL (want postgres://user@host:5432/db; omit the key for the SQLite file in the data folder)", redactURL(s.URL))
	}
	if s.MaxConns < 0 {
		return fmt.Errorf("store.maxConns: %d is negative (omit it or use 0 for the default 8)", s.MaxConns)
	}
	return nil
}

// IsPostgresURL reports whether u names a PostgreSQL server
// ("postgres://" or "postgresql://").
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// redactURL keeps the scheme of u only, so no password reaches an error.
func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		return u[:i+3] + "…"
	}
	if len(u) > 12 {
		return u[:12] + "…"
	}
	return u
}
