package coretools

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// capShape is one output shape for the memory bound: the bytes one stream
// (or both) print, repeated without end.
type capShape struct {
	name   string
	unit   []byte // repeated to fill every chunk
	stderr bool   // chunks alternate between stdout and stderr
	mib    int    // MiB fed (the shapes handled byte by byte get less)
}

func capShapes() []capShape {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	noNUL := bytes.ReplaceAll(random, []byte{0}, []byte{0xff})
	return []capShape{
		{name: "no newline", unit: []byte("a"), mib: 256},
		{name: "CR only", unit: []byte("downloading  42% [=========>          ] 1.2 MB/s\r"), mib: 256},
		{name: "binary", unit: random, mib: 256},
		{name: "invalid UTF-8 no NUL", unit: noNUL, mib: 16},
		{name: "ANSI no newline", unit: []byte("\x1b[1;31merror\x1b[0m: \x1b]8;;http://x\x07link\x1b]8;;\x07 "), mib: 64},
		{name: "ANSI lines", unit: []byte("\x1b[32mok\x1b[0m   pkg/" + strings.Repeat("x", 60) + "\t0.01s\n"), mib: 128},
		{name: "UTF-8 line", unit: []byte("héllo wörld 日本語のテキスト 🙂 "), mib: 64},
		{name: "backspaces", unit: []byte("ab\bc"), mib: 32},
		{name: "mixed streams", unit: []byte("stdout and stderr, no newline "), stderr: true, mib: 256},
	}
}

// TestOutputCapPendingLineBounded feeds up to 256 MiB of each shape in
// 64 KiB chunks (the local sandbox's read size) and in 4 MiB chunks (a
// writer that hands over more at once), and checks after every write that
// the cap's buffers stay within their bounds: the pending line of each
// stream at most outPendingMax (+ one character) and all buffers together
// under 1 MiB. It also bounds the bytes allocated while feeding: a cap that
// held any line whole would allocate at least the line.
//
// Issue 10: 1 GiB printed without a newline peaked at 5 GiB RSS because the
// plain-text fast path skipped the pending-line bound.
func TestOutputCapPendingLineBounded(t *testing.T) {
	for _, sh := range capShapes() {
		total := sh.mib << 20
		switch {
		case raceEnabled:
			total = 6 << 20 // still 48x the pending-line bound
		case testing.Short():
			total = 16 << 20
		}
		chunks := []int{64 << 10, 4 << 20}
		if raceEnabled {
			chunks = chunks[:1]
		}
		for _, chunk := range chunks {
			t.Run(fmt.Sprintf("%s/%dKiB", sh.name, chunk>>10), func(t *testing.T) {
				// The chunk cuts units (and UTF-8 sequences) at varying offsets.
				src := bytes.Repeat(sh.unit, (chunk+len(sh.unit)-1)/len(sh.unit)+1)
				c := newOutputCap(30000, nil)
				w := [2]interface{ Write([]byte) (int, error) }{c.writer(outStdout), c.writer(outStderr)}
				var maxLine, maxAll int
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				off := 0
				for fed, k := 0, 0; fed < total; fed, k = fed+chunk, k+1 {
					s := 0
					if sh.stderr {
						s = k % 2
					}
					o := off % len(sh.unit)
					w[s].Write(src[o : o+chunk])
					off += chunk
					maxLine = max(maxLine, cap(c.norm[0].line), cap(c.norm[1].line))
					maxAll = max(maxAll, cap(c.norm[0].line)+cap(c.norm[1].line)+cap(c.buf)+cap(c.head)+cap(c.tail))
				}
				runtime.ReadMemStats(&after)
				c.finish()
				if maxLine > 2*outPendingMax {
					t.Errorf("a pending line grew to %d bytes of capacity (bound %d)", maxLine, 2*outPendingMax)
				}
				if maxAll > 1<<20 {
					t.Errorf("the cap's buffers grew to %d bytes (bound 1 MiB)", maxAll)
				}
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
					t.Errorf("feeding %d MiB allocated %d bytes (bound 4 MiB)", total>>20, alloc)
				}
				got, st := c.projection()
				if st.RawBytes[0]+st.RawBytes[1] != int64(total+(chunk-total%chunk)%chunk) {
					t.Errorf("raw bytes %v, fed %d", st.RawBytes, total)
				}
				if st.Shown > 30000 || len(got) > 4*30000+200 {
					t.Errorf("projection: %d characters shown, %d bytes", st.Shown, len(got))
				}
			})
		}
	}
}

// TestOutputCapLongLineChunking: a line longer than outPendingMax is
// committed in pieces at the same bytes whatever the chunking, so a later
// lone '\r' erases the same rest and the projection does not depend on how
// the pipe cut the output.
func TestOutputCapLongLineChunking(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, line := range []string{
		strings.Repeat("a", 3*outPendingMax+17) + "\rshort\n",
		strings.Repeat("é日", outPendingMax/2) + "\rX\rY",
		strings.Repeat("ab\x1b[31mc\x1b[0m", outPendingMax/3) + "\r\xff\xfe tail\n",
		strings.Repeat("z", outPendingMax-1) + "é" + strings.Repeat("z", outPendingMax) + "\rw",
	} {
		whole, st := project(30000, line)
		for _, step := range []int{1, 3, 4096, 65535, 65536, 65537, 100000} {
			split, st2 := project(30000, splitEvery(line, step)...)
			if split != whole || st != st2 {
				t.Errorf("%.20q in chunks of %d: the projection changed (%d vs %d characters)", line, step, st2.Chars, st.Chars)
			}
		}
		var chunks []string
		for rest := line; rest != ""; {
			n := min(len(rest), 1+rng.IntN(3*outPendingMax))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		if split, st2 := project(30000, chunks...); split != whole || st != st2 {
			t.Errorf("%.20q in random chunks: the projection changed", line)
		}
	}
}
