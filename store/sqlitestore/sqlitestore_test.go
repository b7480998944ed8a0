package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/store/storetest"
)

func TestMain(m *testing.M) {
	if storetest.IsChild() {
		os.Exit(storetest.ChildMain(func(path string) (store.Store, error) {
			return sqlitestore.Open(path, nil)
		}))
	}
	os.Exit(m.Run())
}

func open(t *testing.T, path string) store.Store {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.RunFile(t, open)
}

func TestConformanceSyncNormal(t *testing.T) {
	if testing.Short() {
		t.Skip("the default (FULL) runs in short mode")
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "s.db"), &sqlitestore.Options{Sync: sqlitestore.SyncNormal, Readers: 1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// rawDB opens the file with the driver alone, for looking under the store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenSetsModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "c", "calls.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600 (records hold raw tool output)", fi.Mode().Perm())
	}
	db := rawDB(t, path)
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	if v := userVersion(t, db); v != sqlitestore.SchemaVersion {
		t.Errorf("user_version = %d, want %d", v, sqlitestore.SchemaVersion)
	}
}

func TestOpenMigratesVersionZero(t *testing.T) {
	// A file some earlier process created and left at user_version 0: it
	// is a SQLite database already (WAL off, one unrelated table).
	path := filepath.Join(t.TempDir(), "old.db")
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE unrelated (x INTEGER); INSERT INTO unrelated VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, db); v != 0 {
		t.Fatalf("setup: user_version %d", v)
	}
	db.Close()

	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Record{ToolCallID: "c1", TaskID: "t1", Tool: "ls", Outcome: store.OutcomeOK}
	if err := s.Put(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	s.Close()

	db = rawDB(t, path)
	if v := userVersion(t, db); v != sqlitestore.SchemaVersion {
		t.Errorf("user_version after Open = %d, want %d", v, sqlitestore.SchemaVersion)
	}
	var x int
	if err := db.QueryRow(`SELECT x FROM unrelated`).Scan(&x); err != nil || x != 42 {
		t.Errorf("migration touched an unrelated table: %v %v", x, err)
	}
	// Reopening at the current version migrates nothing and keeps data.
	s, err = sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(context.Background(), "c1"); err != nil {
		t.Errorf("record lost on reopen: %v", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlitestore.Open(path, nil)
	if !errors.Is(err, sqlitestore.ErrSchemaTooNew) {
		t.Fatalf("Open at version 99 = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "migrate") {
		t.Errorf("error %q does not name the file and the operation", err)
	}
	if v := userVersion(t, rawDB(t, path)); v != 99 {
		t.Errorf("a refused file was changed: user_version %d", v)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlitestore.Open(path, nil)
	if err == nil {
		t.Fatal("Open of a text file succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestErrorsNameFileAndOperation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Get(context.Background(), "call_x")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	for _, want := range []string{"get", "call_x", path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	_, err := sqlitestore.Open(filepath.Join(t.TempDir(), "x.db"), &sqlitestore.Options{Sync: 7})
	if err == nil {
		t.Error("Open with Sync 7 succeeded")
	}
	if _, err := sqlitestore.Open("", nil); err == nil {
		t.Error("Open with an empty path succeeded")
	}
}

func TestOpenPathWithURIBytes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("'?' is not allowed in Windows file names")
	}
	path := filepath.Join(t.TempDir(), "we?ird #dir %20&x=1", "calls.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), &store.Record{ToolCallID: "c", TaskID: "t", Tool: "ls"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at the path given: %v", err)
	}
}
