package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func writer(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func version(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func hasTable(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestMigrateStepsInOrder(t *testing.T) {
	db := writer(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	if err := migrate(ctx, db, migrations); err != nil {
		t.Fatal(err)
	}
	if v := version(t, db); v != SchemaVersion || SchemaVersion != len(migrations) {
		t.Fatalf("version %d, SchemaVersion %d, %d steps", v, SchemaVersion, len(migrations))
	}
	if _, err := db.Exec(`INSERT INTO tasks VALUES ('t', 1); INSERT INTO calls (tool_call_id, task_id, seq, tool, stage, outcome, compaction, pointer) VALUES ('c', 't', 1, 'ls', '', 'ok', '', '')`); err != nil {
		t.Fatal(err)
	}

	// A later build adds two steps; the second depends on the first.
	next := append(append([]string(nil), migrations...),
		`CREATE TABLE extra (id TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
		`ALTER TABLE extra ADD COLUMN note TEXT; INSERT INTO extra SELECT tool_call_id, seq, 'from calls' FROM calls`)
	if err := migrate(ctx, db, next); err != nil {
		t.Fatal(err)
	}
	if v := version(t, db); v != len(next) {
		t.Errorf("version %d, want %d", v, len(next))
	}
	var note string
	if err := db.QueryRow(`SELECT note FROM extra WHERE id = 'c'`).Scan(&note); err != nil || note != "from calls" {
		t.Errorf("migrated data: %q %v", note, err)
	}

	// A failing step rolls back whole: no half-made table, version kept.
	bad := append(append([]string(nil), next...),
		`CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1)`)
	err := migrate(ctx, db, bad)
	if want := fmt.Sprintf("schema step %d to %d", len(next), len(next)+1); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("failing step: err = %v", err)
	}
	if v := version(t, db); v != len(next) {
		t.Errorf("version after a failed step %d, want %d", v, len(next))
	}
	if hasTable(t, db, "half") {
		t.Error("a failed step left its table behind")
	}
}

func TestMigrateTwoOpenersAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	steps := append(append([]string(nil), migrations...), `CREATE TABLE extra (x INTEGER)`)
	dbs := []*sql.DB{writer(t, path), writer(t, path), writer(t, path), writer(t, path)}
	var wg sync.WaitGroup
	errs := make([]error, len(dbs))
	for i, db := range dbs {
		wg.Go(func() { errs[i] = migrate(context.Background(), db, steps) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
	if v := version(t, dbs[0]); v != len(steps) {
		t.Errorf("version %d, want %d", v, len(steps))
	}
}
