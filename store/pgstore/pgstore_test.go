package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/pgstore"
	"github.com/aibuddy/aibuddy/store/pgstore/pgtest"
	"github.com/aibuddy/aibuddy/store/storetest"
)

func TestMain(m *testing.M) {
	if storetest.IsChild() {
		// A storetest child: the "path" the suite gives names the schema.
		os.Exit(storetest.ChildMain(func(path string) (store.Store, error) {
			return pgstore.Open(context.Background(), os.Getenv(pgtest.EnvURL),
				&pgstore.Options{Schema: pgtest.SchemaFor(path), SweepInterval: -1})
		}))
	}
	os.Exit(m.Run())
}

// TestConformance runs the whole storetest suite, the file cases too: a
// "file" is a schema of its own (pgtest.SchemaFor its path), so reopening,
// two instances, two processes and a SIGKILLed writer all meet on one
// schema of the test server.
func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storetest.RunFile(t, func(t *testing.T, path string) store.Store {
		schema := pgtest.Schema(t, url, path)
		s, err := pgstore.Open(context.Background(), url, &pgstore.Options{Schema: schema, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func open(t *testing.T, url, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, &pgstore.Options{Schema: schema, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMigrationsRecordedOnceAndTooNewRefused(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	// Several stores opening a new schema at once apply each step once.
	errs := make(chan error, 4)
	stores := make(chan *pgstore.Store, 4)
	for range 4 {
		go func() {
			s, err := pgstore.Open(context.Background(), url, &pgstore.Options{Schema: schema, SweepInterval: -1})
			errs <- err
			stores <- s
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if s := <-stores; s != nil {
			defer s.Close()
		}
	}
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n, v int
	if err := c.QueryRow(context.Background(), `SELECT count(*), max(version) FROM `+pgx.Identifier{schema, "aibuddy_schema"}.Sanitize()).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != pgstore.SchemaVersion || v != pgstore.SchemaVersion {
		t.Errorf("aibuddy_schema holds %d rows up to version %d, want %d steps once each", n, v, pgstore.SchemaVersion)
	}
	if _, err := c.Exec(context.Background(), `INSERT INTO `+pgx.Identifier{schema, "aibuddy_schema"}.Sanitize()+` (version) VALUES ($1)`, pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(context.Background(), url, &pgstore.Options{Schema: schema}); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Errorf("Open of a schema from a newer build = %v, want ErrSchemaTooNew", err)
	}
}

// TestInterruptedAcrossLiveStores: a store that stays open notices, at
// MarkInterrupted (what its sweeper runs), the running record of a peer
// that closed, and leaves a live peer's alone.
func TestInterruptedAcrossLiveStores(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, t.Name())
	a, b, c := open(t, url, schema), open(t, url, schema), open(t, url, schema)
	defer a.Close()
	defer c.Close()
	ctx := context.Background()
	for _, p := range []struct {
		s  *pgstore.Store
		id string
	}{{b, "of-b"}, {c, "of-c"}} {
		if err := p.s.Put(ctx, &store.Record{ToolCallID: p.id, TaskID: "t", Tool: "execute", Outcome: store.OutcomeRunning}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil { // b's owner lock goes
		t.Fatal(err)
	}
	if err := a.MarkInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Get(ctx, "of-b"); err != nil || r.Outcome != store.OutcomeInterrupted || r.InterruptedAt.IsZero() {
		t.Errorf("record of the closed store: %+v, %v; want interrupted", r, err)
	}
	if r, err := a.Get(ctx, "of-c"); err != nil || r.Outcome != store.OutcomeRunning {
		t.Errorf("record of the live store: %+v, %v; want running", r, err)
	}
}

func TestOpenRefusesBadURL(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2", nil)
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if s := err.Error(); !containsAll(s, "pgstore:", "127.0.0.1") || containsAll(s, "secret") {
		t.Errorf("error %q should name the server and never the password", s)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestExampleFlow is ExampleOpen's flow against the test server.
func TestExampleFlow(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url, pgtest.Schema(t, url, t.Name()))
	defer s.Close()
	ctx := context.Background()
	if err := s.Put(ctx, &store.Record{ToolCallID: "call_1", TaskID: "task-1", Tool: "execute", Outcome: store.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPayload(ctx, "task-1", "outputs/call_1.log", []byte("the full output of make")); err != nil {
		t.Fatal(err)
	}
	part, size, err := s.ReadPayload(ctx, "task-1", "outputs/call_1.log", 4, 11)
	if err != nil || size != 23 || string(part) != "full output" {
		t.Errorf("ReadPayload = %q, %d, %v; want \"full output\", 23", part, size, err)
	}
}
