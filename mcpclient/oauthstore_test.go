package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/mcpclient"
)

// A grant saved and read back; the file is the server's alone and 0600.
func ExampleTokenStore() {
	dir, _ := os.MkdirTemp("", "tokens-")
	defer os.RemoveAll(dir)
	store := mcpclient.NewTokenStore(filepath.Join(dir, "mcp-oauth"))
	unlock, err := store.Lock(context.Background(), "linear", "https://mcp.linear.app/mcp")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = store.Save(&mcpclient.Grant{Server: "linear", URL: "https://mcp.linear.app/mcp", ClientID: "c1",
		TokenURL: "https://linear.app/oauth/token", AccessToken: "at", RefreshToken: "rt"})
	unlock()
	g, _ := store.Load("linear", "https://mcp.linear.app/mcp")
	other, _ := store.Load("linear", "https://elsewhere.example/mcp")
	files, _ := filepath.Glob(filepath.Join(store.Dir(), "*.json"))
	fi, _ := os.Stat(files[0])
	fmt.Println(g.AccessToken, g.RefreshToken, other == nil, len(files), fi.Mode().Perm())
	// Output: at rt true 1 -rw-------
}

// A second holder of a server's lock waits; one whose context ends stops
// waiting with the context's error, and the lock is free once released.
func TestTokenStoreLock(t *testing.T) {
	store := mcpclient.NewTokenStore(t.TempDir())
	unlock, err := store.Lock(context.Background(), "s", "https://s/mcp")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := store.Lock(ctx, "s", "https://s/mcp")
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting lock: %v, want context.Canceled", err)
	}
	unlock()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	unlock2, err := store.Lock(ctx2, "s", "https://s/mcp")
	if err != nil {
		t.Fatalf("the lock after release: %v", err)
	}
	unlock2()
}
