package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/coretools"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/pgstore"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
)

// openRecords opens the store the settings name: PostgreSQL when
// AIBUDDY_STORE_URL or store.url gives a URL (shared by every process that
// reaches it), else the SQLite file records.db in dataDir.
func openRecords(ctx context.Context, cfg *config.Config, dataDir string) (store.Store, error) {
	if url := cfg.StoreURL(os.Getenv); url != "" {
		sc := cfg.Store
		return pgstore.Open(ctx, url, &pgstore.Options{Schema: sc.Schema, MaxConns: sc.MaxConns, SweepInterval: sc.SweepInterval.D()})
	}
	return sqlitestore.Open(filepath.Join(dataDir, "records.db"), StoreOptions(cfg))
}

// storeServices adds the services a shared store gives a run: with
// PostgreSQL, execute copies each call's full output into the store's
// payloads (coretools.ServiceOutputPayloads), so view_tool_call reads it
// from any replica. With the SQLite file the local output file serves
// every process that reaches the store, and is not copied.
func storeServices(services map[string]any, st store.Store) {
	if p, ok := st.(*pgstore.Store); ok {
		services[coretools.ServiceOutputPayloads] = store.Payloads(p)
	}
}
