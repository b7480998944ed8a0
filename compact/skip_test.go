package compact_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// countingStore counts Get calls.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, id string) (*store.Record, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

func TestSmallResultIsNeitherReadNorCounted(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Store: st}
	c, err := compact.New(cs, &compact.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := result.New(cs, &result.Options{Compactor: c})
	ctx := context.Background()

	rec.Call(ctx, "t", &tool.Call{ID: "small", Name: "echo"}, returning(tool.Text("Echo: hello")))
	c.Wait()
	if n := cs.gets.Load(); n != 0 {
		t.Errorf("a result of a few bytes was read back %d time(s) for compaction", n)
	}
	if o, _ := c.Last("small"); o.Reason != "under threshold" || o.BeforeTokens != -1 {
		t.Errorf("small result outcome %+v, want under threshold without a token count", o)
	}

	// Over the byte bound (2,500 bytes) but under 2,500 tokens: read and
	// counted, then left alone.
	rec.Call(ctx, "t", &tool.Call{ID: "medium", Name: "echo"}, returning(tool.Text(strings.Repeat("word ", 800))))
	c.Wait()
	if n := cs.gets.Load(); n != 1 {
		t.Errorf("a 4,000-byte result was read %d time(s), want 1 (it may reach the threshold)", n)
	}
	if o, _ := c.Last("medium"); o.Reason != "under threshold" || o.BeforeTokens <= 0 {
		t.Errorf("medium result outcome %+v, want counted and under threshold", o)
	}
}

// TestTokensNeverExceedBytes is the fact the byte bound rests on: an
// o200k_base count is at most the text's length in bytes, for any script
// and for invalid UTF-8 (counted as U+FFFD, which the model form's JSON
// also holds as at least three bytes).
func TestTokensNeverExceedBytes(t *testing.T) {
	samples := []string{"", "a", " ", "\n\n\n", "hello world", "日本語のテキスト", "😀😀😀👩‍👩‍👧‍👦",
		"\u0000\u0001\u0002", "عربي", "ÿþ", strings.Repeat("x", 5000), strings.Repeat("🙂", 700)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var b strings.Builder
		for range rng.IntN(200) {
			switch rng.IntN(4) {
			case 0:
				b.WriteRune(rune(rng.IntN(0x80)))
			case 1:
				b.WriteRune(rune(0x80 + rng.IntN(0x800)))
			case 2:
				b.WriteRune(rune(0x800 + rng.IntN(0xD000)))
			default:
				b.WriteRune(rune(0x10000 + rng.IntN(0x10000)))
			}
		}
		samples = append(samples, b.String())
	}
	for _, s := range samples {
		if n := compact.Count(s); n > len(s) {
			t.Errorf("Count(%q) = %d tokens > %d bytes", s, n, len(s))
		}
	}
	// The other half: a model form's text is never longer in bytes than
	// the model form itself, invalid UTF-8 included (encoding/json writes
	// each invalid byte as the 6-byte escape \ufffd; it decodes to the
	// 3-byte U+FFFD).
	for _, text := range append(samples, string([]byte{0xff, 0xfe, 0x80, 'a', 0xc3}), "\"\\\u2028<>&") {
		m := result.EncodeModel(tool.Text(text))
		w, err := result.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Text(); len(got) > len(m) {
			t.Errorf("model form of %d bytes holds a text of %d bytes", len(m), len(got))
		}
	}
}

// TestViewByProviderID: view_tool_call given the provider's id of a call
// (what the model itself called it) finds the call in the current task
// when the id is unique there, and lists the candidates when the provider
// reused it.
func TestViewByProviderID(t *testing.T) {
	r := newRig(t, compact.Options{})
	ctx := context.Background()
	r.rec.Call(ctx, "task1", &tool.Call{ID: "ours-1", ProviderID: "toolu_1", Name: "echo"}, returning(tool.Text("first output")))
	r.rec.Call(ctx, "task1", &tool.Call{ID: "ours-2", ProviderID: "call_0", Name: "echo"}, returning(tool.Text("second output")))
	r.rec.Call(ctx, "task1", &tool.Call{ID: "ours-3", ProviderID: "call_0", Name: "echo"}, returning(tool.Text("third output")))
	r.rec.Call(ctx, "task2", &tool.Call{ID: "ours-4", ProviderID: "toolu_1", Name: "echo"}, returning(tool.Text("other task")))
	in := tool.WithTaskID(ctx, "task1")
	res := r.view.Call(in, &tool.Call{ID: "v1", Input: []byte(`{"id":"toolu_1"}`)})
	if res.IsError || !strings.Contains(res.AllText(), "first output") || !strings.Contains(res.AllText(), "toolCallId=ours-1") {
		t.Errorf("view by the provider's unique id: %s", res.AllText())
	}
	res = r.view.Call(in, &tool.Call{ID: "v2", Input: []byte(`{"id":"call_0"}`)})
	if !res.IsError || res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "ours-2") || !strings.Contains(res.AllText(), "ours-3") {
		t.Errorf("view by a reused provider id: %s (stage %s), want a Parameters error naming ours-2 and ours-3", res.AllText(), res.Stage)
	}
	res = r.view.Call(ctx, &tool.Call{ID: "v3", Input: []byte(`{"id":"toolu_1"}`)})
	if !res.IsError || !strings.Contains(res.AllText(), "no recorded tool call") {
		t.Errorf("view by a provider id without a task: %s", res.AllText())
	}
}
