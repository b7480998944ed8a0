package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/store/pgstore"
	"github.com/aibuddy/aibuddy/store/pgstore/pgtest"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// Without a URL the records are the data folder's SQLite file; with
// store.url (or AIBUDDY_STORE_URL, which wins) they are PostgreSQL, and
// only then does execute get the store's payloads for its full output.
func TestOpenRecordsChoosesTheBackend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv(config.EnvStoreURL, "")
	st, err := openRecords(ctx, &config.Config{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	sq, ok := st.(*sqlitestore.Store)
	if !ok || sq.Path() != filepath.Join(dir, "records.db") {
		t.Fatalf("without a URL: %T", st)
	}
	services := map[string]any{}
	storeServices(services, st)
	if _, ok := services[coretools.ServiceOutputPayloads]; ok {
		t.Error("with the SQLite file execute should not copy its output into the store")
	}
	st.Close()

	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	cfg := &config.Config{Store: config.StoreSettings{URL: "postgres://nobody@127.0.0.1:1/none", Schema: schema, SweepInterval: -1}}
	t.Setenv(config.EnvStoreURL, url)
	st, err = openRecords(ctx, cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*pgstore.Store); !ok {
		t.Fatalf("with %s: %T", config.EnvStoreURL, st)
	}
	storeServices(services, st)
	if _, ok := services[coretools.ServiceOutputPayloads]; !ok {
		t.Error("with PostgreSQL execute should copy its output into the store")
	}
	// The settings' URL alone, unreachable: the error names it, not a
	// password.
	t.Setenv(config.EnvStoreURL, "")
	cfg.Store.URL = "postgres://u:hunter2@127.0.0.1:1/none?connect_timeout=2"
	if _, err := openRecords(ctx, cfg, dir); err == nil || !strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unreachable store.url: %v", err)
	}
}
