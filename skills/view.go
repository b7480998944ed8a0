package skills

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/aibuddy/aibuddy/registry"
	"github.com/aibuddy/aibuddy/tool"
)

// GroupKey is the tool key of the skills group.
const GroupKey = "skills"

// Prerequisite is the run prerequisite the skills group requires. A host
// adds it to the run's prerequisites (capability.RunSpec.Prerequisites)
// when its catalogue is not empty (Catalog.Len() > 0); without it the run
// excludes view_skill with the reason "missing prerequisite".
const Prerequisite = "skills"

// Bounds of one view_skill result.
const (
	// DefaultLimit is the number of lines shown when "limit" is omitted,
	// and the largest "limit" accepted.
	DefaultLimit = 2000
	// MaxChars is the most characters (runes) of instructions or file text
	// in one result, the seed's 30,000-character output cap. A single line
	// longer than that is cut.
	MaxChars = 30000
	// binarySniff is how many bytes are inspected to tell text from binary.
	binarySniff = 8000
	// maxListed is how many reference files or skill names a result lists.
	maxListed = 100
)

const viewSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "description": "The skill's name, as listed in the skills catalogue."},
    "file": {"type": "string", "minLength": 1, "description": "Optional: one of the skill's reference files, a path relative to the skill folder as listed by view_skill (e.g. \"references/api.md\"). Omit to read the skill's instructions."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to show, 1-based. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Most lines to show. Default 2000."}
  },
  "required": ["name"],
  "additionalProperties": false
}`

type viewInput struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// ViewSkill returns the view_skill tool over c.
//
// Input: {"name": string, "file"?: string, "offset"?: line (1-based),
// "limit"?: lines (1 to 2000, default 2000)}.
//
// Without "file" the result is the skill's instructions (SKILL.md without
// its front matter, as loaded) under a header naming the skill and its
// folder, followed by the list of its reference files (at most 100 named;
// the rest counted). With "file" it is that file's text ("SKILL.md" gives
// the instructions). Either text is shown from line "offset", at most
// "limit" lines and MaxChars characters;
// when more follows, the result says so and gives the offset to continue
// with. A binary or non-UTF-8 file gets a one-line notice with its size
// instead of its content. Evidence: "skill", "file", "first_line",
// "last_line", "truncated", "next_offset" (when truncated), "bytes" (for a
// file).
//
// Errors: an unknown skill is a Parameters-stage error listing the known
// names; a file that does not exist, is a directory or is not a regular
// file is a Parameters-stage error listing the skill's files; a file path
// that leaves the skill folder (absolute, "..", or through a symbolic link)
// is an Authorization-stage error and nothing is read; an offset past the
// end is a Parameters-stage error; a read failure is Execution.
//
// The tool's description lists the skills by name and one-line purpose
// (see [ViewOptions]), so a host that does not pass the server's or
// group's instructions to its model still learns which skills exist.
func ViewSkill(c *Catalog) *tool.Tool { return ViewSkillWith(c, nil) }

// ViewOptions bound the skills list in view_skill's description. A zero
// field (or a nil *ViewOptions) takes its default.
type ViewOptions struct {
	// ListSkills is the most skills named in the description; the rest are
	// counted ("and 12 more"). Default [DefaultListSkills].
	ListSkills int
	// ListChars is the most characters (runes) of the list, the closing
	// "and N more" line included; a skill whose line would pass it is
	// counted instead of listed. Default [DefaultListChars].
	ListChars int
}

// Defaults of [ViewOptions], and the most characters of one skill's
// purpose in the list (its description's first sentence, cut with "…").
const (
	DefaultListSkills = 30
	DefaultListChars  = 4000
	purposeChars      = 120
)

// ViewSkillWith is [ViewSkill] with the description's skills list bounded
// by opts (nil means the defaults).
func ViewSkillWith(c *Catalog, opts *ViewOptions) *tool.Tool {
	return tool.MustDefine(tool.Spec{
		Name: "view_skill",
		Description: "Read a skill before following it. Returns the skill's full instructions and the list of its " +
			"reference files; with \"file\", returns one reference file's text (use offset/limit for long files).\n" +
			skillList(c, opts),
		InputSchema: json.RawMessage(viewSchema),
		Annotations: &tool.Annotations{Title: "View a skill", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
		Handler: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			in, err := tool.Decode[viewInput](call)
			if err != nil {
				return nil, err
			}
			if in.Offset == 0 {
				in.Offset = 1
			}
			if in.Limit == 0 || in.Limit > DefaultLimit {
				in.Limit = DefaultLimit
			}
			s, ok := c.Lookup(in.Name)
			if !ok {
				return nil, unknownSkill(c, in.Name)
			}
			if in.File == "" {
				return viewInstructions(s, in)
			}
			return viewFile(ctx, s, in)
		},
	})
}

// skillList is the part of view_skill's description that names the
// skills: "Skills available (name: purpose):" then one "- name: purpose"
// line per skill in load order, at most opts.ListSkills lines and
// opts.ListChars characters (the header not counted, the closing
// "- and N more …" line included when skills are left out).
func skillList(c *Catalog, opts *ViewOptions) string {
	var o ViewOptions
	if opts != nil {
		o = *opts
	}
	if o.ListSkills <= 0 {
		o.ListSkills = DefaultListSkills
	}
	if o.ListChars <= 0 {
		o.ListChars = DefaultListChars
	}
	all := c.Skills()
	if len(all) == 0 {
		return "No skills are loaded."
	}
	more := func(n int) string {
		return fmt.Sprintf("- and %d more (not listed here; view_skill with a name it does not know answers with every name)", n)
	}
	tail := utf8.RuneCountInString(more(len(all))) // the longest closing line
	var b strings.Builder
	b.WriteString("Skills available (name: purpose):")
	used := 0 // runes of the list so far, newlines included
	for i, s := range all {
		line := "\n- " + s.Name + ": " + purpose(s.Description, purposeChars)
		n := utf8.RuneCountInString(line)
		budget := o.ListChars
		if i < len(all)-1 {
			budget -= tail + 1 // room to say what is left out
		}
		if i == o.ListSkills || used+n > budget {
			b.WriteString("\n" + more(len(all)-i))
			break
		}
		b.WriteString(line)
		used += n
	}
	return b.String()
}

// purpose is a skill description on one line (whitespace collapsed), cut
// to at most n characters at a word boundary with "…".
func purpose(desc string, n int) string {
	d := strings.Join(strings.Fields(desc), " ")
	r := []rune(d)
	if len(r) <= n {
		return d
	}
	cut := string(r[:n-1])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}

func unknownSkill(c *Catalog, name string) error {
	names := c.Names()
	if len(names) == 0 {
		return tool.Errorf(tool.Parameters, "no skill named %q: no skills are loaded", name).
			WithHint("continue without a skill")
	}
	list := names
	more := ""
	if len(list) > maxListed {
		list, more = list[:maxListed], fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return tool.Errorf(tool.Parameters, "no skill named %q; known skills: %s%s", name, strings.Join(list, ", "), more).
		WithHint("call view_skill with one of the known names")
}

func viewInstructions(s Skill, in viewInput) (*tool.Result, error) {
	w, err := window(strings.NewReader(s.body), in.Offset, in.Limit)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s (folder %s)\n\n", s.Name, s.Dir)
	b.WriteString(w.text)
	if !strings.HasSuffix(w.text, "\n") {
		b.WriteByte('\n')
	}
	if w.truncated {
		b.WriteString("\n")
		b.WriteString(w.note("instructions", fmt.Sprintf(`{"name": %q, "offset": %%d}`, s.Name)))
	}
	b.WriteString("\n")
	b.WriteString(fileList(s))
	ev := w.evidence(s.Name, "")
	ev["files"] = len(s.Files) + s.FilesOmitted
	return tool.TextWith(b.String(), ev), nil
}

func fileList(s Skill) string {
	total := len(s.Files) + s.FilesOmitted
	if total == 0 {
		return "Reference files: none.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Reference files (%d); read one with view_skill {\"name\": %q, \"file\": \"<path>\"}:\n", total, s.Name)
	for i, f := range s.Files {
		if i == maxListed {
			break
		}
		b.WriteString("- ")
		b.WriteString(f)
		b.WriteByte('\n')
	}
	if rest := total - min(len(s.Files), maxListed); rest > 0 {
		fmt.Fprintf(&b, "- ... and %d more not listed\n", rest)
	}
	return b.String()
}

func viewFile(ctx context.Context, s Skill, in viewInput) (*tool.Result, error) {
	rel, local := relSlash(in.File)
	if !local {
		return nil, tool.Errorf(tool.Authorization, "%q is outside the folder of skill %s", in.File, s.Name).
			WithHint("name a reference file by its path relative to the skill folder, as view_skill lists them")
	}
	if rel == SkillFile || rel == "." {
		return viewInstructions(s, in)
	}
	parent, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, tool.Errorf(tool.Execution, "cannot open the skills folder of %s: %w", s.Name, err)
	}
	defer parent.Close()
	root, err := parent.OpenRoot(s.entry)
	if err != nil {
		if isEscape(err) {
			return nil, tool.Errorf(tool.Authorization, "the folder of skill %s now leads outside its skills folder; not read", s.Name)
		}
		return nil, tool.Errorf(tool.Execution, "cannot open the folder of skill %s: %w", s.Name, err)
	}
	defer root.Close()
	notFound := func(what string) error {
		return tool.Errorf(tool.Parameters, "%s %q in skill %s", what, in.File, s.Name).
			WithHint("choose one of the reference files:\n" + fileList(s))
	}
	fi, err := root.Stat(rel) // follows symbolic links only inside the skill folder
	switch {
	case err == nil:
	case isEscape(err):
		return nil, tool.Errorf(tool.Authorization, "%q leads outside the folder of skill %s (a symbolic link); not read", in.File, s.Name).
			WithHint("read only the files inside the skill folder")
	case errors.Is(err, fs.ErrNotExist):
		return nil, notFound("no file")
	default:
		return nil, tool.Errorf(tool.Execution, "cannot read %q in skill %s: %w", in.File, s.Name, rootErr(err))
	}
	if fi.IsDir() {
		return nil, notFound("is a directory, not a file:")
	}
	if !fi.Mode().IsRegular() {
		return nil, notFound("not a regular file:")
	}
	f, err := root.Open(rel)
	if err != nil {
		if isEscape(err) {
			return nil, tool.Errorf(tool.Authorization, "%q leads outside the folder of skill %s; not read", in.File, s.Name)
		}
		return nil, tool.Errorf(tool.Execution, "cannot open %q in skill %s: %w", in.File, s.Name, rootErr(err))
	}
	defer f.Close()
	br := bufio.NewReaderSize(&ctxReader{ctx: ctx, r: f}, 64<<10)
	head, _ := br.Peek(binarySniff)
	if isBinary(head) {
		return tool.TextWith(fmt.Sprintf("%s in skill %s is a binary or non-UTF-8 file (%d bytes); its content is not shown.",
			rel, s.Name, fi.Size()), tool.Evidence{"skill": s.Name, "file": rel, "bytes": fi.Size(), "binary": true}), nil
	}
	w, err := window(br, in.Offset, in.Limit)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(w.text)
	if w.truncated {
		if !strings.HasSuffix(w.text, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(w.note(rel, fmt.Sprintf(`{"name": %q, "file": %q, "offset": %%d}`, s.Name, rel)))
	}
	ev := w.evidence(s.Name, rel)
	ev["bytes"] = fi.Size()
	return tool.TextWith(b.String(), ev), nil
}

// isBinary reports whether head (the first bytes of a file) looks binary:
// a NUL byte, or bytes that are not UTF-8 (an incomplete rune at the cut is
// allowed).
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
		head = head[:len(head)-1]
	}
	return !utf8.Valid(head)
}

// view is one window of lines of a text.
type view struct {
	text        string
	first, last int  // 1-based lines shown
	truncated   bool // more text follows (or a line was cut)
	next        int  // the offset to continue with, when truncated
	cutLine     bool // the last line shown was cut at MaxChars
}

// note says what a truncated window showed and how to continue; input is
// the view_skill input with a %d for the offset.
func (w view) note(what, input string) string {
	s := fmt.Sprintf("[%s truncated: showed lines %d-%d", what, w.first, w.last)
	if w.cutLine {
		s += fmt.Sprintf(", line %d cut at %d characters", w.last, MaxChars)
	}
	if w.next > 0 {
		s += "; continue with view_skill " + fmt.Sprintf(input, w.next)
	}
	return s + "]\n"
}

func (w view) evidence(skill, file string) tool.Evidence {
	ev := tool.Evidence{"skill": skill, "first_line": w.first, "last_line": w.last, "truncated": w.truncated}
	if file != "" {
		ev["file"] = file
	}
	if w.next > 0 {
		ev["next_offset"] = w.next
	}
	if w.cutLine {
		ev["line_cut"] = w.last
	}
	return ev
}

// window reads lines offset..offset+limit-1 of r, at most MaxChars runes.
// It reads only as far as it needs (plus one line, to know whether more
// follows) and holds at most MaxChars+4 bytes of any single line.
func window(r io.Reader, offset, limit int) (view, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	w := view{first: offset}
	var b strings.Builder
	chars := 0
	for n := 1; ; n++ {
		line, cut, err := readLine(br, MaxChars)
		if err == io.EOF && line == "" {
			break
		}
		if err != nil && err != io.EOF {
			return w, tool.Errorf(tool.Execution, "reading stopped at line %d: %w", n, err)
		}
		if n < offset {
			if err == io.EOF {
				break
			}
			continue
		}
		if n >= offset+limit {
			w.truncated, w.next = true, n
			break
		}
		rc := utf8.RuneCountInString(line)
		if chars+rc > MaxChars || cut {
			if n > offset {
				w.truncated, w.next = true, n
				break
			}
			// The first line alone is over the cap: show its head.
			line = truncateRunes(line, MaxChars)
			w.cutLine, w.truncated, w.next = true, true, n+1
			b.WriteString(line)
			b.WriteString(" [line cut]\n")
			w.last = n
			break
		}
		chars += rc
		b.WriteString(line)
		w.last = n
		if err == io.EOF {
			break
		}
	}
	if w.last == 0 {
		if offset > 1 {
			return w, tool.Errorf(tool.Parameters, "offset %d is past the end of the text", offset).
				WithHint("start again with offset 1")
		}
		w.first = 0
	}
	w.text = b.String()
	if w.cutLine {
		if _, err := br.Peek(1); err != nil {
			w.next = 0 // the cut line was the last one
		}
	}
	return w, nil
}

// readLine returns the next line including its "\n" (none at end of
// file). At most capRunes*4 bytes of a line are kept; cut reports that the
// rest was skipped.
func readLine(br *bufio.Reader, capRunes int) (string, bool, error) {
	limit := capRunes*utf8.UTFMax + 1
	var buf []byte
	cut := false
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) <= limit {
			buf = append(buf, frag...)
		} else {
			if room := limit - len(buf); room > 0 {
				buf = append(buf, frag[:room]...)
			}
			cut = true
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return string(buf), cut, err
	}
}

func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return strings.TrimRight(s, "\n")
}

// ctxReader stops reading when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Group is the skills tool group over c: key "skills", the one tool
// view_skill, and Instructions carrying the catalogue ("Skills available
// (use view_skill to read one before following it):\n" + c.Summary()).
// It requires the run prerequisite [Prerequisite]; a host adds it when
// c.Len() > 0, so an empty catalogue is excluded with its reason rather
// than exposing a tool with nothing to view.
func Group(c *Catalog) registry.Group { return GroupWith(c, nil) }

// GroupWith is [Group] with view_skill's description list bounded by opts
// (nil means the defaults).
func GroupWith(c *Catalog, opts *ViewOptions) registry.Group {
	return registry.Group{
		Key:      GroupKey,
		Names:    []string{"view_skill"},
		Requires: registry.Requirements{Prerequisites: []string{Prerequisite}},
		Build: func(registry.Env) ([]*tool.Tool, error) {
			return []*tool.Tool{ViewSkillWith(c, opts)}, nil
		},
		Instructions: "Skills available (use view_skill to read one before following it):\n" + c.Summary(),
	}
}

// Meta is the skills group's metadata.
var Meta = registry.Meta{Key: GroupKey, DisplayName: "Skills", Category: "knowledge",
	Description: "Agent Skills from the configured skills folders, listed by name and purpose and read on demand with view_skill."}
