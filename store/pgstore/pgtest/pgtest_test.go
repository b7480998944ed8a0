package pgtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aibuddy/aibuddy/store/pgstore/pgtest"
)

func TestSchemaForIsStableAndDistinct(t *testing.T) {
	a, b := pgtest.SchemaFor("/tmp/x/store.db"), pgtest.SchemaFor("/tmp/y/store.db")
	if a != pgtest.SchemaFor("/tmp/x/store.db") || a == b || len(a) != 26 {
		t.Errorf("SchemaFor gave %q and %q", a, b)
	}
}

func TestSchemaDroppedAtEnd(t *testing.T) {
	url := pgtest.URL(t)
	var name string
	t.Run("uses", func(t *testing.T) {
		name = pgtest.Schema(t, url, t.Name())
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `CREATE SCHEMA `+name); err != nil {
			t.Fatal(err)
		}
	})
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s still there after its test (%d, %v)", name, n, err)
	}
}

// A test and the child processes it starts name one schema by a key they
// share, such as a file path.
func ExampleSchemaFor() {
	name := pgtest.SchemaFor("/tmp/TestX/001/data/store.db")
	fmt.Println(len(name), name[:2])
	// Output: 26 t_
}
