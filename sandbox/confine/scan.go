package confine

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Scanner finds, under a root folder, the entries a predicate selects,
// walking again only the folders whose modification time changed since the
// last walk (adding, removing or renaming an entry changes its folder's
// time), so a confined command's start costs one lstat per folder of an
// unchanged tree. It is safe for concurrent use.
type Scanner struct {
	match    func(rel, base string, d fs.DirEntry) bool
	skipDir  func(rel, base string) bool
	maxDepth int

	mu   sync.Mutex
	dirs map[string]*scanDir
	gen  uint64 // the current walk, to forget folders a walk did not see
}

type scanDir struct {
	gen     uint64 // the last walk that saw it
	mod     time.Time
	subdirs []string // base names
	hits    []Hit
}

// Hit is one entry a Scanner selected.
type Hit struct {
	Path string // absolute
	Dir  bool   // a folder (masked as a whole)
}

// NewScanner makes a scanner: match selects an entry (rel is
// slash-separated and relative to the walked root); a selected folder is
// not descended. skipDir, when set, leaves a folder out without a look
// inside. maxDepth bounds the levels walked below the root (0: no bound).
// Symbolic links to folders are never followed.
func NewScanner(match func(rel, base string, d fs.DirEntry) bool, skipDir func(rel, base string) bool, maxDepth int) *Scanner {
	return &Scanner{match: match, skipDir: skipDir, maxDepth: maxDepth, dirs: map[string]*scanDir{}}
}

// DenyScanner selects the workspace entries whose path or base name
// matches one of patterns (path.Match syntax, as approval.deniedPaths) and
// skips the insides of .git (read-only, and git's own).
func DenyScanner(patterns []string) *Scanner {
	return NewScanner(func(rel, base string, d fs.DirEntry) bool {
		return matchDenied(patterns, rel, base)
	}, func(rel, base string) bool { return rel == ".git" }, 0)
}

// matchDenied reports whether rel (or its base name) matches a pattern.
func matchDenied(patterns []string, rel, base string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}

// Scan walks root and returns what the predicate selected, sorted by path
// within each folder. A root that does not exist yields nothing.
func (s *Scanner) Scan(root string) []Hit { return s.scan(root, s.maxDepth) }

// scan is Scan with a depth bound of its own (0: none).
func (s *Scanner) scan(root string, maxDepth int) []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Hit
	s.gen++
	s.walk(root, "", 0, maxDepth, &out)
	// Forget folders under root that this walk did not see (gone).
	prefix := strings.TrimSuffix(root, "/") + "/"
	for d, st := range s.dirs {
		if st.gen != s.gen && (d == root || strings.HasPrefix(d, prefix)) {
			delete(s.dirs, d)
		}
	}
	return out
}

func (s *Scanner) walk(dir, rel string, depth, maxDepth int, out *[]Hit) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return
	}
	st := s.dirs[dir]
	if st == nil || !st.mod.Equal(fi.ModTime()) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			delete(s.dirs, dir)
			return
		}
		st = &scanDir{mod: fi.ModTime()}
		for _, e := range ents {
			name := e.Name()
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if s.match(r, name, e) {
				st.hits = append(st.hits, Hit{Path: filepath.Join(dir, name), Dir: e.IsDir()})
				continue
			}
			if e.IsDir() && (s.skipDir == nil || !s.skipDir(r, name)) {
				st.subdirs = append(st.subdirs, name)
			}
		}
		s.dirs[dir] = st
	}
	st.gen = s.gen
	*out = append(*out, st.hits...)
	if maxDepth > 0 && depth+1 >= maxDepth {
		return
	}
	for _, name := range st.subdirs {
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		s.walk(dir+"/"+name, r, depth+1, maxDepth, out)
	}
}
