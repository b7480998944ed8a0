package coretools

import (
	"strings"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// Issue 10, item 3: text in an encoding other than UTF-8 is text, named as
// such, shown converted (or, when its encoding is not recognized, with
// each non-UTF-8 byte as \xNN), and edited so that the bytes on disk are
// the file's own encoding with only the replaced text changed; the edit
// echo shows the characters, never U+FFFD for correct bytes, and no false
// "long line cut" note. The file bytes are written literally here (made
// with Python's codecs), not by the library under test.
func TestLocalNonUTF8TextIsReadAndEditedInItsEncoding(t *testing.T) {
	for _, tc := range []struct {
		name, file     string
		encoding       string // ReadResult.Encoding
		note           string // in read_file's notes
		line           string // a line as read_file shows it (without prefix)
		old, new, want string // an edit and the file's bytes after it
	}{
		{name: "GBK", encoding: "gb18030", note: "text encoding is gb18030, not UTF-8",
			file: "# \xc5\xe4\xd6\xc3\xce\xc4\xbc\xfe\xa3\xba\xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3\nhost = \"\xb1\xbe\xb5\xd8\xb7\xfe\xce\xf1\xc6\xf7\"\nname = \xd5\xc5\xc8\xfd # \xd3\xc3\xbb\xa7\xb5\xc4\xc3\xfb\xd7\xd6\n",
			line: "# 配置文件：这是我们的数据库设置。", old: "张三", new: "李四",
			want: "# \xc5\xe4\xd6\xc3\xce\xc4\xbc\xfe\xa3\xba\xd5\xe2\xca\xc7\xce\xd2\xc3\xc7\xb5\xc4\xca\xfd\xbe\xdd\xbf\xe2\xc9\xe8\xd6\xc3\xa1\xa3\nhost = \"\xb1\xbe\xb5\xd8\xb7\xfe\xce\xf1\xc6\xf7\"\nname = \xc0\xee\xcb\xc4 # \xd3\xc3\xbb\xa7\xb5\xc4\xc3\xfb\xd7\xd6\n"},
		{name: "Big5", encoding: "big5", note: "text encoding is big5",
			file: "// \xb3o\xacO\xa4@\xad\xd3\xb4\xfa\xb8\xd5\xa1A\xa7\xda\xad\xcc\xaa\xba\xb5{\xa6\xa1\xb7|\xc5\xaa\xa8\xfa\xa5\xa6\xa1C\nname = \"\xa4\xa4\xa4\xe5\xa6W\xa6r\"\n",
			line: "// 這是一個測試，我們的程式會讀取它。", old: "中文名字", new: "英文名字",
			want: "// \xb3o\xacO\xa4@\xad\xd3\xb4\xfa\xb8\xd5\xa1A\xa7\xda\xad\xcc\xaa\xba\xb5{\xa6\xa1\xb7|\xc5\xaa\xa8\xfa\xa5\xa6\xa1C\nname = \"\xad^\xa4\xe5\xa6W\xa6r\"\n"},
		{name: "Shift_JIS", encoding: "shift_jis", note: "text encoding is shift_jis",
			file: "# \x82\xb1\x82\xea\x82\xcd\x93\xfa\x96{\x8c\xea\x82\xcc\x83e\x83X\x83g\x82\xc5\x82\xb7\x81B\ntitle = \"\x90\xdd\x92\xe8\x83t\x83@\x83C\x83\x8b\"\n",
			line: "# これは日本語のテストです。", old: "テスト", new: "試験",
			want: "# \x82\xb1\x82\xea\x82\xcd\x93\xfa\x96{\x8c\xea\x82\xcc\x8e\x8e\x8c\xb1\x82\xc5\x82\xb7\x81B\ntitle = \"\x90\xdd\x92\xe8\x83t\x83@\x83C\x83\x8b\"\n"},
		{name: "EUC-KR", encoding: "euc-kr", note: "text encoding is euc-kr",
			file: "# \xc0\xcc\xb0\xcd\xc0\xba \xc7\xd1\xb1\xb9\xbe\xee \xc5\xd7\xbd\xba\xc6\xae\xc0\xd4\xb4\xcf\xb4\xd9.\nname = \"\xbb\xe7\xbf\xeb\xc0\xda \xc0\xcc\xb8\xa7\"\n",
			line: "# 이것은 한국어 테스트입니다.", old: "사용자", new: "관리자",
			want: "# \xc0\xcc\xb0\xcd\xc0\xba \xc7\xd1\xb1\xb9\xbe\xee \xc5\xd7\xbd\xba\xc6\xae\xc0\xd4\xb4\xcf\xb4\xd9.\nname = \"\xb0\xfc\xb8\xae\xc0\xda \xc0\xcc\xb8\xa7\"\n"},
		{name: "Latin-1 (windows-1252)", encoding: "windows-1252", note: "text encoding is windows-1252",
			file: "caf\xe9 cr\xe8me br\xfbl\xe9e \x97 \x93na\xefve\x94 fa\xe7ade\n",
			line: "café crème brûlée — “naïve” façade", old: "naïve", new: "naïf",
			want: "caf\xe9 cr\xe8me br\xfbl\xe9e \x97 \x93na\xeff\x94 fa\xe7ade\n"},
		{name: "UTF-16LE with BOM", encoding: "utf-16le", note: "text encoding is utf-16le",
			file: "\xff\xfeh\x00e\x00l\x00l\x00o\x00\x0d\x00\n\x00w\x00\xf6\x00r\x00l\x00d\x00 \x00\x13'\x0d\x00\n\x00",
			line: "wörld ✓", old: "wörld", new: "wörld!",
			want: "\xff\xfeh\x00e\x00l\x00l\x00o\x00\x0d\x00\n\x00w\x00\xf6\x00r\x00l\x00d\x00!\x00 \x00\x13'\x0d\x00\n\x00"},
		{name: "unrecognized (windows-1251)", encoding: "unknown", note: `every other byte as \xNN`,
			file: "\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0! \xdd\xf2\xee \xf2\xe5\xf1\xf2\xee\xe2\xfb\xe9 \xf4\xe0\xe9\xeb.\n\xe8\xec\xff = \"\xcf\xee\xeb\xfc\xe7\xee\xe2\xe0\xf2\xe5\xeb\xfc\"\n",
			line: `\xE8\xEC\xFF = "\xCF\xEE\xEB\xFC\xE7\xEE\xE2\xE0\xF2\xE5\xEB\xFC"`, old: `\xE8\xEC\xFF =`, new: "name =",
			want: "\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0! \xdd\xf2\xee \xf2\xe5\xf1\xf2\xee\xe2\xfb\xe9 \xf4\xe0\xe9\xeb.\nname = \"\xcf\xee\xeb\xfc\xe7\xee\xe2\xe0\xf2\xe5\xeb\xfc\"\n"},
		{name: "UTF-8 with one stray byte", encoding: "utf-8 (", note: `each is shown as \xNN`,
			file: "config = 1\nnote = \"caf\xe9 \xe2\x80\x94 \xc3\xbcn\xc3\xafcode \xe2\x9c\x93\"\n",
			line: `note = "caf\xE9 — ünïcode ✓"`, old: `caf\xE9 —`, new: "café —",
			want: "config = 1\nnote = \"caf\xc3\xa9 \xe2\x80\x94 \xc3\xbcn\xc3\xafcode \xe2\x9c\x93\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFSWorld(t, nil)
			w.file(t, "f.txt", tc.file)
			r, err := w.sb.Read(t.Context(), sandbox.ReadRequest{Path: "f.txt"})
			if err != nil || r.Kind != sandbox.KindText || !strings.HasPrefix(r.Encoding, tc.encoding) {
				t.Fatalf("sandbox read: kind %q encoding %q err %v", r.Kind, r.Encoding, err)
			}
			got := fsMustOK(t, w.call(t, "read_file", map[string]any{"path": "f.txt"})) + "\n"
			if strings.Contains(got, "binary") || !strings.Contains(got, tc.note) || !strings.Contains(got, "→"+tc.line+"\n") {
				t.Fatalf("read_file:\n%s", got)
			}
			if strings.ContainsRune(got, '\uFFFD') {
				t.Errorf("U+FFFD for bytes that are right:\n%s", got)
			}

			echo := fsMustOK(t, w.call(t, "edit_file", map[string]any{"path": "f.txt", "old_string": tc.old, "new_string": tc.new}))
			if b := w.bytes(t, "f.txt"); b != tc.want {
				t.Fatalf("bytes on disk after the edit:\n got %q\nwant %q", b, tc.want)
			}
			if strings.ContainsRune(echo, '\uFFFD') || strings.Contains(echo, "cut") || strings.Contains(echo, "truncated") {
				t.Errorf("edit echo:\n%s", echo)
			}
			shown := strings.ReplaceAll(tc.line, tc.old, tc.new)
			if !strings.Contains(tc.line, tc.old) {
				shown = tc.new
			}
			if !strings.Contains(echo, shown) {
				t.Errorf("edit echo does not show %q:\n%s", shown, echo)
			}
		})
	}
}

// A character the file's encoding cannot hold is a Parameters error that
// names it; nothing is written.
func TestLocalEditRefusesCharacterTheEncodingCannotHold(t *testing.T) {
	w := newFSWorld(t, nil)
	latin := "caf\xe9 cr\xe8me br\xfbl\xe9e \x97 \x93na\xefve\x94 fa\xe7ade\n"
	w.file(t, "m.txt", latin)
	msg := fsMustFail(t, w.call(t, "edit_file", map[string]any{"path": "m.txt", "old_string": "façade", "new_string": "façade ✓"}), tool.Parameters)
	if !strings.Contains(msg, "windows-1252 (Latin-1) cannot hold '✓' (U+2713)") || !strings.Contains(msg, "nothing was written") {
		t.Errorf("message: %s", msg)
	}
	if w.bytes(t, "m.txt") != latin {
		t.Error("the file changed")
	}
}

// BH-097 (c): read_file of a file holding FF FE 41 (a UTF-16LE byte order
// mark, then one odd byte) shows U+FFFD and says that one byte could not
// be decoded, instead of a silent replacement; the file is unchanged.
func TestReadFileBH097UndecodableUTF16Noted(t *testing.T) {
	w := newFSWorld(t, nil)
	w.file(t, "f.txt", "\xff\xfeA")
	res := w.call(t, "read_file", map[string]any{"path": "f.txt"})
	got := fsMustOK(t, res)
	if !strings.Contains(got, "note: 1 byte was not valid utf-16le (an unpaired surrogate, or an odd final byte) and shown as U+FFFD") ||
		!strings.Contains(got, "→\uFFFD") || res.Evidence["undecodable_bytes"] != int64(1) {
		t.Errorf("read_file %v:\n%s", res.Evidence, got)
	}
	if b := w.bytes(t, "f.txt"); b != "\xff\xfeA" {
		t.Errorf("the file changed: %q", b)
	}
}
