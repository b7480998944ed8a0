package compact_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/sqlitestore"
	"github.com/aibuddy/aibuddy/tool"
)

// bigLine is line i (0-based) of the generated output: 48 characters in 52
// bytes, multi-byte characters included.
func bigLine(i int) string { return fmt.Sprintf("row %09d é€ %s\n", i, strings.Repeat("x", 30)) }

const (
	bigLineChars = 48
	bigLineBytes = 52
	bigLines     = 200_000_000 / bigLineBytes // ~200 MB of lines
	bigNeedleAt  = 1_500_000                  // characters into the long last line
	bigLongLine  = 3_000_000                  // characters of the last line (no newline)
)

// writeBigOutput writes ~203 MB: bigLines lines, then one 3,000,000-character
// line without a newline holding "NEEDLE" at bigNeedleAt.
func writeBigOutput(tb testing.TB, path string) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := []byte(bigLine(0))
	for i := range bigLines {
		for k, v := 12, i; k >= 4; k, v = k-1, v/10 { // the 9 digits of bigLine(i)
			line[k] = byte('0' + v%10)
		}
		w.Write(line)
	}
	w.WriteString(strings.Repeat("z", bigNeedleAt) + "NEEDLE" + strings.Repeat("z", bigLongLine-bigNeedleAt-6))
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	fi, _ := f.Stat()
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// bigChars returns characters off..off+n of the generated output.
func bigChars(off, n int) string {
	var b strings.Builder
	for i := off / bigLineChars; b.Len() < 4*n+4*bigLineChars && i < bigLines; i++ {
		b.WriteString(bigLine(i))
	}
	r := []rune(b.String())
	s := off % bigLineChars
	return string(r[s:min(s+n, len(r))])
}

// bigRig records an execute call whose evidence names the generated file
// inside the view's FullOutputDir.
func bigRig(tb testing.TB) (view *tool.Tool, size int64) {
	tb.Helper()
	dir := tb.TempDir()
	outDir := filepath.Join(dir, "outputs")
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(outDir, "big.out")
	size = writeBigOutput(tb, path)
	st, err := sqlitestore.Open(filepath.Join(dir, "calls.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	res := tool.TextWith("exit code: 0\noutput: (the projection)\n", tool.Evidence{"full_output_path": path})
	if err := st.Put(context.Background(), &store.Record{ToolCallID: "big", TaskID: "t", Tool: "execute",
		Input: json.RawMessage(`{"command":"gen"}`), Output: result.EncodeOutput(res), Model: result.EncodeModel(res), Outcome: store.OutcomeOK}); err != nil {
		tb.Fatal(err)
	}
	return compact.ViewToolCall(st, dir, &compact.ViewOptions{FullOutputDir: outDir}), size
}

// measuredView runs one view and returns its text, evidence and the bytes it
// allocated (runtime.MemStats.TotalAlloc, which bounds its peak heap).
func measuredView(t *testing.T, view *tool.Tool, input string) (string, tool.Evidence, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := view.Call(context.Background(), &tool.Call{ID: "v", Input: json.RawMessage(input)})
	runtime.ReadMemStats(&after)
	if res.IsError {
		t.Fatalf("%s: %s", input, res.AllText())
	}
	return res.AllText(), res.Evidence, after.TotalAlloc - before.TotalAlloc
}

// A ~200 MB execute output file is viewed in bounded memory: every mode
// returns the exact slice and allocates under 64 MiB per call (the whole
// file in memory, as before, took over 1 GB for one slice).
func TestViewHugeOutputFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB file")
	}
	t0 := time.Now()
	view, size := bigRig(t)
	t.Logf("wrote %d bytes in %s", size, time.Since(t0))
	const bound = 64 << 20
	totalChars := bigLines*bigLineChars + bigLongLine
	check := func(name, input string, want func(text string, ev tool.Evidence) string) {
		t.Helper()
		start := time.Now()
		text, ev, alloc := measuredView(t, view, input)
		t.Logf("%s: %.1f MiB allocated (%s)", name, float64(alloc)/(1<<20), time.Since(start))
		if alloc > bound && !raceEnabled { // race builds drop sync.Pool items: regexp reallocates per Match
			t.Errorf("%s allocated %d bytes, over %d", name, alloc, bound)
		}
		if msg := want(text, ev); msg != "" {
			t.Errorf("%s: %s\n%s", name, msg, text[:min(len(text), 600)])
		}
	}
	mid := bigLines / 2 * bigLineChars
	check("offset slice", fmt.Sprintf(`{"id":"big","offset":%d,"limit":8000}`, mid+7), func(text string, ev tool.Evidence) string {
		b := body(text)
		if !strings.HasPrefix(bigChars(mid+7, 8000), b) || len([]rune(b)) < 4000 || ev["offset"] != mid+7 {
			return "wrong slice"
		}
		if ev["total_chars"] != totalChars || !strings.Contains(text, fmt.Sprintf("in %s lines)", commas(bigLines+1))) {
			return fmt.Sprintf("wrong totals (%d bytes file)", size)
		}
		return ""
	})
	check("line range", `{"id":"big","lines":"1000-1001"}`, func(text string, _ tool.Evidence) string {
		if body(text) != bigLine(999)+bigLine(1000) || !strings.Contains(text, "→ lines 1,000-1,001 (96 characters in 2 lines)") {
			return "wrong lines"
		}
		return ""
	})
	check("last lines", fmt.Sprintf(`{"id":"big","lines":"%d-%d","limit":20}`, bigLines, bigLines+5), func(text string, _ tool.Evidence) string {
		if body(text) != string([]rune(bigLine(bigLines - 1))[:20]) || !strings.Contains(text, fmt.Sprintf("→ lines %s-%s", commas(bigLines), commas(bigLines+1))) {
			return "wrong end lines"
		}
		return ""
	})
	check("pattern", `{"id":"big","pattern":"row 0031[0-9]{5} ","limit":3}`, func(text string, ev tool.Evidence) string {
		want := fmt.Sprintf("%d: %s\n%d: %s\n%d: %s", 3_100_001, strings.TrimSuffix(bigLine(3_100_000), "\n"),
			3_100_002, strings.TrimSuffix(bigLine(3_100_001), "\n"), 3_100_003, strings.TrimSuffix(bigLine(3_100_002), "\n"))
		if ev["matches"] != 100_000 || body(text) != want {
			return fmt.Sprintf("matches %v", ev["matches"])
		}
		return ""
	})
	check("pattern in a 3 MB line", `{"id":"big","pattern":"NEEDLE"}`, func(text string, ev tool.Evidence) string {
		want := fmt.Sprintf("%d: [line of 3,000,000 characters; showing from byte %s] %s…", bigLines+1, commas(bigNeedleAt-100),
			strings.Repeat("z", 100)+"NEEDLE"+strings.Repeat("z", 194))
		if body(text) != want || ev["matches"] != 1 {
			return "wrong cut"
		}
		return ""
	})
	check("json_path refused", `{"id":"big","part":"input","json_path":"$.command"}`, func(text string, _ tool.Evidence) string {
		if body(text) != `"gen"` {
			return "input json_path"
		}
		return ""
	})
	res := view.Call(context.Background(), &tool.Call{ID: "v", Input: json.RawMessage(`{"id":"big","json_path":"$.a"}`)})
	if !res.IsError || res.Stage != tool.Parameters || !strings.Contains(res.AllText(), "over the 16,777,216-byte bound") {
		t.Errorf("json_path on a 200 MB file: %s", res.AllText())
	}
}

// BenchmarkViewHugeOutputFile times view_tool_call on a ~200 MB output file;
// MB/s is of the file's size.
func BenchmarkViewHugeOutputFile(b *testing.B) {
	view, size := bigRig(b)
	for _, bc := range []struct{ name, input string }{
		{"offset_middle", fmt.Sprintf(`{"id":"big","offset":%d}`, bigLines/2*bigLineChars)},
		{"lines_middle", fmt.Sprintf(`{"id":"big","lines":"%d-%d"}`, bigLines/2, bigLines/2+100)},
		{"pattern_rare", `{"id":"big","pattern":"row 0031[0-9]{5} "}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if res := view.Call(context.Background(), &tool.Call{ID: "v", Input: json.RawMessage(bc.input)}); res.IsError {
					b.Fatal(res.AllText())
				}
			}
		})
	}
}
