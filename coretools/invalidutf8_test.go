package coretools

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOutputCapCountsInvalidUTF8 is BH-097 at the cap: the UTF-8 encoding
// of a surrogate (ED A0 80, not valid UTF-8) is three U+FFFD and three
// counted bytes at raw offsets 3, 4 and 5, whether it comes in one chunk,
// byte by byte or cut after its lead byte; a sequence cut by the end of
// the output counts its bytes too.
func TestOutputCapCountsInvalidUTF8(t *testing.T) {
	in := "ok \xed\xa0\x80 end\n"
	for name, chunks := range map[string][]string{"whole": {in}, "bytewise": bytewise(in), "cut after the lead": {in[:4], in[4:]}} {
		got, st := project(30000, chunks...)
		if got != "ok \uFFFD\uFFFD\uFFFD end" || st.Invalid[outStdout] != 3 || !slices.Equal(st.invalidAt(outStdout), []int64{3, 4, 5}) {
			t.Errorf("%s: %q, invalid %d at %v", name, got, st.Invalid[outStdout], st.invalidAt(outStdout))
		}
	}
	got, st := project(30000, "x\xe2\x82")
	if got != "x\uFFFD" || st.Invalid[outStdout] != 2 || !slices.Equal(st.invalidAt(outStdout), []int64{1, 2}) {
		t.Errorf("cut at the end: %q, invalid %d at %v", got, st.Invalid[outStdout], st.invalidAt(outStdout))
	}
	if _, st := project(30000, "héllo 日本\n"); st.Invalid[outStdout] != 0 || len(st.invalidAt(outStdout)) != 0 {
		t.Errorf("valid UTF-8 counted as invalid: %+v", st)
	}
}

// TestExecuteBH097InvalidUTF8IsReported is BH-097 (a) through execute: a
// command printing ED A0 80 gets a result that is valid UTF-8 (three
// U+FFFD), whose note says how many bytes were replaced and at which
// offsets, with invalid_utf8_bytes in the evidence, while the full output
// file keeps the raw bytes; the result's JSON is valid UTF-8 as it is, so
// no encoder replaces anything silently later.
func TestExecuteBH097InvalidUTF8IsReported(t *testing.T) {
	r := newExecRig(t, nil, &ExecuteOptions{OutputDir: t.TempDir()})
	res, _ := r.call(context.Background(), map[string]any{"command": `printf 'ok \355\240\200 end\n'`})
	if res.IsError {
		t.Fatalf("error: %s", res.AllText())
	}
	txt := res.AllText()
	if body(res) != "ok \uFFFD\uFFFD\uFFFD end" ||
		!strings.Contains(txt, "note: 3 invalid UTF-8 bytes of stdout replaced with U+FFFD at offsets 3, 4, 5; the full output file keeps the raw bytes\n") {
		t.Errorf("result:\n%s", txt)
	}
	if evInt(t, res, "invalid_utf8_bytes") != 3 {
		t.Errorf("evidence %v", res.Evidence)
	}
	for _, c := range res.Content {
		if !utf8.ValidString(c.Text) {
			t.Errorf("content is not valid UTF-8: %q", c.Text)
		}
	}
	b, err := json.Marshal(res.Content)
	if err != nil || !utf8.Valid(b) || strings.Contains(string(b), `\ufffd`) {
		t.Errorf("result JSON %s: %v", b, err)
	}
	path, _ := res.Evidence["full_output_path"].(string)
	if raw, err := os.ReadFile(path); err != nil || string(raw) != "ok \xed\xa0\x80 end\n" {
		t.Errorf("full output %q: %q %v", path, raw, err)
	}
}
