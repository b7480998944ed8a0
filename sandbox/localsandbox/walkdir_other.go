//go:build !linux

package localsandbox

import (
	"io/fs"
	"os"
	"time"
)

// direntBufBytes is unused here: directories are read through os.Root.
const direntBufBytes = 0

// dirHandle is one open directory of the walk: a root handle on it, so
// entries are opened relative to it and nothing above it is reachable.
type dirHandle struct {
	root *os.Root
}

// dirEnt is one directory entry: its name, its type bits and the entry as
// os.ReadDir returned it (which holds its lstat).
type dirEnt struct {
	name string
	typ  fs.FileMode
	de   fs.DirEntry
}

// openWalkRoot opens t's directory (the search root) as a root handle of
// its own.
func openWalkRoot(s *Sandbox, t *target) (*dirHandle, error) {
	r, err := s.root.OpenRoot(t.real)
	if err != nil {
		return nil, err
	}
	return &dirHandle{root: r}, nil
}

func (d *dirHandle) openDir(name string) (*dirHandle, error) {
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return &dirHandle{root: r}, nil
}

func (d *dirHandle) close() { d.root.Close() }

// grepFd is -1: grep jobs open d's files through openFile.
func (d *dirHandle) grepFd() int { return -1 }

func (d *dirHandle) readDir(*[]byte) ([]dirEnt, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	ents := make([]dirEnt, 0, len(des))
	for _, e := range des {
		ents = append(ents, dirEnt{name: e.Name(), typ: e.Type(), de: e})
	}
	return ents, err
}

// lstat returns the modification time and size in bytes of e, an entry of
// d, without following a symlink.
func (d *dirHandle) lstat(e dirEnt) (mod time.Time, size int64, ok bool) {
	fi, err := e.de.Info()
	if err != nil {
		return time.Time{}, 0, false
	}
	return fi.ModTime(), fi.Size(), true
}

// openFile opens name, an entry of d, through d's root.
func (d *dirHandle) openFile(name string) (*os.File, error) { return d.root.Open(name) }

// sweepHandle makes the directory rel a root handle for the temporary
// file sweep (f, which openDirBeneath opened, is closed).
func sweepHandle(s *Sandbox, f *os.File, rel string) *dirHandle {
	f.Close()
	r, err := s.root.OpenRoot(rel)
	if err != nil {
		return nil
	}
	return &dirHandle{root: r}
}

// remove removes name, a file entry of d.
func (d *dirHandle) remove(name string) error { return d.root.Remove(name) }
