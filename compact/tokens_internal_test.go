package compact

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// TestSmallResultBuildsNoVocabulary: background precompaction of a result
// that is under the threshold by its length alone never builds the o200k
// vocabulary (it cost every CLI call 0.1 s of CPU and 20 MB), and a large
// result is still counted exactly. The vocabulary is built once per
// process, so the check runs in a fresh copy of the test binary.
func TestSmallResultBuildsNoVocabulary(t *testing.T) {
	if os.Getenv("COMPACT_VOCAB_CHILD") == "1" {
		vocabChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSmallResultBuildsNoVocabulary$", "-test.count=1")
	cmd.Env = append(os.Environ(), "COMPACT_VOCAB_CHILD=1", "COMPACT_VOCAB_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"small: under threshold, tokens -1, vocabulary built false",
		"large: tokens 3001 (Count 3001), vocabulary built true"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func vocabChild() {
	dir := os.Getenv("COMPACT_VOCAB_DIR")
	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	c, err := New(st, &Options{DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	rec := result.New(st, &result.Options{Compactor: c})
	echo := func(s string) result.Next {
		return func(context.Context, *tool.Call) *tool.Result { return tool.Text(s) }
	}
	ctx := context.Background()
	small := strings.Repeat("a file listing line\n", 100) // 2,000 bytes < 2,500 tokens
	rec.Call(ctx, "task", &tool.Call{ID: "small", Name: "echo"}, echo(small))
	c.Wait()
	o, _ := c.Last("small")
	fmt.Printf("small: %s, tokens %d, vocabulary built %v\n", o.Reason, o.BeforeTokens, o200k != nil)
	large := strings.Repeat(" a", 3001) // 3,001 tokens
	rec.Call(ctx, "task", &tool.Call{ID: "large", Name: "echo"}, echo(large))
	c.Wait()
	o, _ = c.Last("large")
	fmt.Printf("large: tokens %d (Count %d), vocabulary built %v\n", o.BeforeTokens, Count(large), o200k != nil)
}
