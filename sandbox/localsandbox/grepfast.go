package localsandbox

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// fastScanBytes is the largest file grep scans as one buffer; larger files
// go line by line with a bounded buffer.
const fastScanBytes = 8 << 20

// grepJob is one file for grep: either a single name relative to an open
// directory (dirFd, name; opened without following symlinks, its
// modification time read from the open file once it matched), or an open
// function with the size and time the walk already has.
type grepJob struct {
	dirFd   int
	name    string
	open    func() (*os.File, error)
	display string
	mod     time.Time
	size    int64  // bytes, -1 when unknown
	release func() // called once the file has been read; may be nil
}

// openFile opens the job's file for reading; modTime returns its
// modification time (and fails when the open file is not a regular one);
// closeFile must be called.
func (j grepJob) openFile() (r io.Reader, modTime func() (time.Time, error), closeFile func(), err error) {
	if j.name != "" {
		fd, err := openAt(j.dirFd, j.name)
		if err != nil {
			return nil, nil, nil, err
		}
		return fdReader(fd), func() (time.Time, error) { return fdModTime(fd) }, func() { closeFd(fd) }, nil
	}
	f, err := j.open()
	if err != nil {
		return nil, nil, nil, err
	}
	return f, func() (time.Time, error) { return j.mod, nil }, func() { f.Close() }, nil
}

// sharedDir is a directory handle shared by the walk and the grep jobs of
// its files; the last one to finish closes it.
type sharedDir struct {
	dir  *dirHandle
	refs atomic.Int32
}

func (d *sharedDir) release() {
	if d.refs.Add(-1) == 0 {
		d.dir.close()
	}
}

// grepWorker searches files with its own buffers and counters; flush hands
// its counts and matches to the searcher.
type grepWorker struct {
	sr               *searcher
	head             []byte        // the first sniffBytes of a file
	whole            []byte        // a whole file, for scanWhole
	br               *bufio.Reader // line reader for the slow path
	searched, binary int
	found            []*fileRes
}

func newGrepWorker(sr *searcher) *grepWorker {
	return &grepWorker{sr: sr, head: make([]byte, sniffBytes), br: bufio.NewReaderSize(nil, readBufBytes)}
}

func (w *grepWorker) run(j grepJob) {
	if j.release != nil {
		defer j.release()
	}
	if w.sr.done() {
		return
	}
	if fr := w.grep(j); fr != nil && fr.count > 0 {
		w.found = append(w.found, fr)
		if len(w.found) >= 16 {
			w.flush()
		}
	}
}

// flush merges the worker's results into the searcher.
func (w *grepWorker) flush() {
	sr := w.sr
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.res.FilesSearched += w.searched
	sr.res.SkippedBinary += w.binary
	for _, fr := range w.found {
		sr.res.Total += fr.count
		sr.add(fr)
	}
	w.searched, w.binary, w.found = 0, 0, w.found[:0]
}

// scanWhole searches buf, a whole file with no CR byte, without splitting
// it into lines first: the multi-line form of the pattern finds the next
// candidate, and the line holding the candidate's start is then matched on
// its own with the line-by-line pattern, so results are exactly those of a
// line-by-line search. Any line that matches on its own also matches the
// buffer at the same offset (^ and $ are line anchors here, \A and \z send
// a search to the slow path), so the leftmost candidate never lies past it.
func (w *grepWorker) scanWhole(buf []byte, fr *fileRes) {
	sr := w.sr
	if sr.pf != nil {
		w.scanNeedles(buf, fr)
		return
	}
	pos, lines, counted := 0, 0, 0
	for iter := 0; pos < len(buf); iter++ {
		if iter%ctxCheckEvery == ctxCheckEvery-1 && sr.done() {
			return
		}
		loc := sr.reFast.FindIndex(buf[pos:])
		if loc == nil {
			return
		}
		start := pos + loc[0]
		if start == len(buf) && buf[len(buf)-1] == '\n' {
			return // an empty match after the final newline: no line is there
		}
		lineStart := pos
		if i := bytes.LastIndexByte(buf[pos:start], '\n'); i >= 0 {
			lineStart = pos + i + 1
		}
		lineEnd := len(buf)
		if i := bytes.IndexByte(buf[lineStart:], '\n'); i >= 0 {
			lineEnd = lineStart + i
		}
		lines += bytes.Count(buf[counted:lineStart], []byte{'\n'})
		counted = lineStart
		line := buf[lineStart:lineEnd]
		if l := sr.re.FindIndex(line); l != nil {
			fr.count++
			if len(fr.matches) < sr.maxResults {
				m := sr.clip(line, l, 0)
				m.Path, m.Line, m.Chars = fr.path, lines+1, countChars(line)
				fr.matches = append(fr.matches, m)
			}
		}
		pos = lineEnd + 1
	}
}

// scanNeedles searches buf, a whole file with no CR byte, for the lines
// that hold a needle of the prefilter, and matches each such line on its
// own with the line-by-line pattern: a line that matches holds a needle,
// so results are exactly those of a line-by-line search.
func (w *grepWorker) scanNeedles(buf []byte, fr *fileRes) {
	sr := w.sr
	sc := pfScan{p: sr.pf, buf: buf}
	sc.reset()
	pos, lines, counted := 0, 0, 0
	for iter := 0; pos < len(buf); iter++ {
		if iter%ctxCheckEvery == ctxCheckEvery-1 && sr.done() {
			return
		}
		hit := sc.next(pos)
		if hit < 0 {
			return
		}
		lineStart := pos
		if i := bytes.LastIndexByte(buf[pos:hit], '\n'); i >= 0 {
			lineStart = pos + i + 1
		}
		lineEnd := len(buf)
		if i := bytes.IndexByte(buf[hit:], '\n'); i >= 0 {
			lineEnd = hit + i
		}
		lines += bytes.Count(buf[counted:lineStart], []byte{'\n'})
		counted = lineStart
		line := buf[lineStart:lineEnd]
		if l := sr.re.FindIndex(line); l != nil {
			fr.count++
			if len(fr.matches) < sr.maxResults {
				m := sr.clip(line, l, 0)
				m.Path, m.Line, m.Chars = fr.path, lines+1, countChars(line)
				fr.matches = append(fr.matches, m)
			}
		}
		pos = lineEnd + 1
	}
}
