package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of a load. They keep the start-up scan and the catalogue in the
// system prompt small whatever a skills folder holds.
const (
	// MaxSkills is the most skills one [Load] accepts across all folders;
	// the rest are reported as Problems.
	MaxSkills = 200
	// MaxSkillFileBytes is the largest SKILL.md accepted, in bytes (1 MiB).
	MaxSkillFileBytes = 1 << 20
	// MaxFiles is the most reference files listed per skill in
	// [Skill.Files]; the count of the rest is [Skill.FilesOmitted].
	MaxFiles = 200
	// maxWalk is the most directory entries visited per skill when listing
	// its reference files.
	maxWalk = 10000
	// MaxNameLen and MaxDescriptionLen are the Agent Skills limits on the
	// front matter, in characters.
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

// SkillFile is the file name that makes a folder a skill.
const SkillFile = "SKILL.md"

// Skill is one loaded skill.
type Skill struct {
	// Name is the front matter "name": 1 to 64 lowercase letters, digits
	// and hyphens, no leading, trailing or doubled hyphen. Unique in a
	// catalogue.
	Name string
	// Description is the front matter "description" (1 to 1024
	// characters): what the skill does and when to use it.
	Description string
	// Dir is the skill's folder, absolute (as found in the skills folder;
	// it may be a symbolic link that stays inside that folder).
	Dir string
	// Path is the absolute path of the skill's SKILL.md.
	Path string
	// Files are the skill's reference files: slash-separated paths
	// relative to Dir, sorted, at most MaxFiles. Only regular files (or
	// symbolic links to regular files inside Dir) are listed; SKILL.md
	// itself and names starting with "." are not.
	Files []string
	// FilesOmitted counts reference files not listed because of MaxFiles
	// (or because the walk stopped after visiting 10,000 entries).
	FilesOmitted int
	// Meta holds every other front matter field as decoded from YAML
	// (for example "license", "allowed-tools", "metadata"), unknown ones
	// included. Nil when there are none.
	Meta map[string]any

	body  string // the Markdown instructions, front matter stripped
	root  string // the absolute skills folder Dir was found in
	entry string // Dir's name inside root
}

// Instructions returns the skill's Markdown instructions: SKILL.md with
// its front matter stripped, as read at load time.
func (s Skill) Instructions() string { return s.body }

// Problem is a SKILL.md (or a skills folder) that could not be loaded.
type Problem struct {
	Path   string // the SKILL.md, skill folder or skills folder concerned
	Reason string // one sentence: why it was not loaded
}

func (p Problem) String() string { return p.Path + ": " + p.Reason }

// Catalog is the set of loaded skills, read-only after [Load] and safe for
// concurrent use. A nil *Catalog is empty.
type Catalog struct {
	skills []Skill
	byName map[string]int
}

// Load scans each skills folder in dirs for skills: every sub-folder
// dir/<folder>/ holding a SKILL.md is one skill (the scan does not recurse
// further). Folders are scanned in the order given, sub-folders in name
// order; a folder that does not exist is skipped silently (hosts may list
// default locations), one that cannot be read is a Problem.
//
// Each SKILL.md that cannot be used is reported as a Problem and left out:
// no front matter, bad YAML or front matter that is not a mapping, a name
// or description missing, not a string, or breaking the Agent Skills rules
// (name 1 to 64 characters of lowercase letters, digits and hyphens,
// without a leading, trailing or doubled hyphen; description 1 to 1024
// characters), a file larger than MaxSkillFileBytes or not UTF-8, a
// name already loaded (the first one found wins, so a later folder never
// silently overrides an earlier one), a sub-folder or SKILL.md that is a
// symbolic link leading outside the skills folder, or the MaxSkills bound
// reached. A sub-folder with "skill.md" in another letter case is reported
// too; other sub-folders without SKILL.md are ignored.
//
// Load never returns a nil *Catalog.
func Load(dirs []string) (*Catalog, []Problem) {
	c := &Catalog{byName: map[string]int{}}
	var problems []Problem
	add := func(p, format string, args ...any) {
		problems = append(problems, Problem{Path: p, Reason: fmt.Sprintf(format, args...)})
	}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			add(dir, "cannot resolve the skills folder: %v", err)
			continue
		}
		root, err := os.OpenRoot(abs)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				add(abs, "cannot open the skills folder: %v", rootErr(err))
			}
			continue
		}
		entries, err := fs.ReadDir(root.FS(), ".")
		if err != nil {
			add(abs, "cannot read the skills folder: %v", rootErr(err))
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			s, ok, reason := loadOne(root, abs, e)
			if !ok {
				if reason != "" {
					add(filepath.Join(abs, e.Name(), SkillFile), "%s", reason)
				}
				continue
			}
			if i, dup := c.byName[s.Name]; dup {
				add(s.Path, "duplicate skill name %q: already loaded from %s; this one is ignored", s.Name, c.skills[i].Path)
				continue
			}
			if len(c.skills) >= MaxSkills {
				add(s.Path, "not loaded: the catalogue is full (at most %d skills)", MaxSkills)
				continue
			}
			c.byName[s.Name] = len(c.skills)
			c.skills = append(c.skills, s)
		}
		root.Close()
	}
	return c, problems
}

// loadOne loads the skill in entry e of the skills folder root. ok false
// with an empty reason means "not a skill folder".
func loadOne(root *os.Root, abs string, e fs.DirEntry) (s Skill, ok bool, reason string) {
	name := e.Name()
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err := root.Stat(name) // follows the link only inside root
		if err != nil {
			if isEscape(err) {
				return s, false, "the skill folder is a symbolic link leading outside the skills folder; not followed"
			}
			return s, false, ""
		}
		if !fi.IsDir() {
			return s, false, ""
		}
	} else if !e.IsDir() {
		return s, false, ""
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return s, false, fmt.Sprintf("cannot open the skill folder: %v", rootErr(err))
	}
	defer sub.Close()
	// Stat before Open: opening a FIFO named SKILL.md would block.
	fi, err := sub.Stat(SkillFile)
	if err == nil && !fi.Mode().IsRegular() {
		return s, false, SkillFile + " is not a regular file"
	}
	var f *os.File
	if err == nil {
		f, err = sub.Open(SkillFile)
	}
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if other := caseVariant(sub); other != "" {
				return s, false, fmt.Sprintf("found %q; the file must be named %s", other, SkillFile)
			}
			return s, false, ""
		case isEscape(err):
			return s, false, SkillFile + " is a symbolic link leading outside the skill folder; not read"
		}
		return s, false, fmt.Sprintf("cannot open %s: %v", SkillFile, rootErr(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillFileBytes+1))
	if err != nil {
		return s, false, fmt.Sprintf("cannot read %s: %v", SkillFile, err)
	}
	if len(data) > MaxSkillFileBytes {
		return s, false, fmt.Sprintf("%s is larger than %d bytes", SkillFile, MaxSkillFileBytes)
	}
	s, err = Parse(data)
	if err != nil {
		return s, false, err.Error()
	}
	s.root, s.entry = abs, name
	s.Dir = filepath.Join(abs, name)
	s.Path = filepath.Join(s.Dir, SkillFile)
	s.Files, s.FilesOmitted = listFiles(sub)
	return s, true, ""
}

// caseVariant returns the name of a file in sub that is SKILL.md in
// another letter case, or "".
func caseVariant(sub *os.Root) string {
	entries, _ := fs.ReadDir(sub.FS(), ".")
	for _, e := range entries {
		if strings.EqualFold(e.Name(), SkillFile) && e.Name() != SkillFile {
			return e.Name()
		}
	}
	return ""
}

// listFiles walks a skill folder and returns its reference files, bounded.
func listFiles(sub *os.Root) ([]string, int) {
	var files []string
	omitted, visited := 0, 0
	fsys := sub.FS()
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		visited++
		if visited > maxWalk {
			omitted++
			return fs.SkipAll
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == SkillFile || d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := sub.Stat(p) // a link is listed only if it resolves inside
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		if len(files) >= MaxFiles {
			omitted++
			return nil
		}
		files = append(files, p)
		return nil
	})
	slices.Sort(files)
	return files, omitted
}

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	bomUTF8  = []byte("\xef\xbb\xbf")
	errNoFM  = errors.New("no YAML front matter: " + SkillFile + " must start with a line \"---\", then name and description, then a line \"---\"")
	reserved = map[string]bool{"name": true, "description": true}
)

// Parse parses the text of a SKILL.md: YAML front matter between a first
// line "---" and the next line "---" (or "..."), then the Markdown
// instructions. It checks the Agent Skills rules on name and description
// and returns a Skill with Name, Description, Meta and the instructions set
// (Dir, Path and Files are left empty). Errors are one sentence each.
func Parse(data []byte) (Skill, error) {
	var s Skill
	data = bytes.TrimPrefix(data, bomUTF8)
	if !utf8.Valid(data) {
		return s, errors.New(SkillFile + " is not UTF-8 text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return s, errNoFM
	}
	var front, body string
	found := false
	for off := 0; off <= len(rest); {
		line, after, more := strings.Cut(rest[off:], "\n")
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			front, body, found = rest[:off], after, true
			break
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	if !found {
		return s, errors.New("the YAML front matter is not closed: no line \"---\" after it")
	}
	var fields map[string]any
	if err := yaml.Unmarshal([]byte(front), &fields); err != nil {
		return s, fmt.Errorf("bad YAML front matter: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if fields == nil {
		return s, errors.New("the front matter is empty: name and description are required")
	}
	str := func(key string) (string, error) {
		v, ok := fields[key]
		if !ok || v == nil {
			return "", fmt.Errorf("the front matter has no %s", key)
		}
		sv, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("the front matter field %s must be a string, got %T", key, v)
		}
		return strings.TrimSpace(sv), nil
	}
	var err error
	if s.Name, err = str("name"); err != nil {
		return s, err
	}
	switch n := utf8.RuneCountInString(s.Name); {
	case n == 0:
		return s, errors.New("the name is empty")
	case n > MaxNameLen:
		return s, fmt.Errorf("the name %q is %d characters long; at most %d", s.Name, n, MaxNameLen)
	case !nameRE.MatchString(s.Name):
		return s, fmt.Errorf("the name %q must be lowercase letters, digits and hyphens, without a leading, trailing or doubled hyphen", s.Name)
	}
	if s.Description, err = str("description"); err != nil {
		return s, err
	}
	switch n := utf8.RuneCountInString(s.Description); {
	case n == 0:
		return s, errors.New("the description is empty")
	case n > MaxDescriptionLen:
		return s, fmt.Errorf("the description is %d characters long; at most %d", n, MaxDescriptionLen)
	}
	for k, v := range fields {
		if reserved[k] {
			continue
		}
		if s.Meta == nil {
			s.Meta = map[string]any{}
		}
		s.Meta[k] = v
	}
	s.body = strings.TrimLeft(body, "\n")
	return s, nil
}

// isEscape reports whether err is os.Root refusing a path that leads
// outside it (a symbolic link or "..").
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// rootErr strips the *PathError wrapper for shorter messages.
func rootErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Skills returns the loaded skills in load order (folders in the order
// given to Load, then sub-folder name).
func (c *Catalog) Skills() []Skill {
	if c == nil {
		return nil
	}
	return slices.Clone(c.skills)
}

// Len is the number of loaded skills.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.skills)
}

// Lookup returns the skill called name.
func (c *Catalog) Lookup(name string) (Skill, bool) {
	if c == nil {
		return Skill{}, false
	}
	i, ok := c.byName[name]
	if !ok {
		return Skill{}, false
	}
	return c.skills[i], true
}

// Names returns the skill names in load order.
func (c *Catalog) Names() []string {
	var names []string
	for _, s := range c.Skills() {
		names = append(names, s.Name)
	}
	return names
}

// Summary is the catalogue for the system prompt: one line per skill,
// "- <name>: <description>", the description's whitespace (newlines
// included) collapsed to single spaces. Empty when there are no skills.
// At most MaxSkills lines of at most about 1,100 characters each.
func (c *Catalog) Summary() string {
	var b strings.Builder
	for _, s := range c.Skills() {
		b.WriteString("- ")
		b.WriteString(s.Name)
		b.WriteString(": ")
		b.WriteString(strings.Join(strings.Fields(s.Description), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// relSlash cleans a model-given file path for use in an os.Root: it
// returns the slash path and whether it stays inside the folder lexically.
func relSlash(p string) (string, bool) {
	p = strings.ReplaceAll(p, "\\", "/")
	if p == "" || strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return p, false
	}
	clean := path.Clean(p)
	if !filepath.IsLocal(filepath.FromSlash(clean)) {
		return clean, false
	}
	return clean, true
}
