package localsandbox

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// fastScanBytes is the largest file grep scans as one buffer; larger files
// go line by line with a bounded buffer.
const fastScanBytes = 8 << 20

// grepWorkers is the number of files grep searches at once: one per CPU
// the Go runtime may use, at most 8.
func grepWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 8) }

// grepJob is one file for grep: either a single name relative to an open
// directory (dirFd, name; opened without following symlinks, and its size
// and time read from the open file), or an open function with the size and
// time the walk already has.
type grepJob struct {
	dirFd   int
	name    string
	open    func() (*os.File, error)
	display string
	mod     time.Time
	size    int64  // bytes, -1 when unknown
	release func() // called once the file has been read; may be nil
}

// openFile opens the job's file for reading and returns its size and
// modification time; closeFile must be called.
func (j grepJob) openFile() (r io.Reader, size int64, mod time.Time, closeFile func(), err error) {
	if j.name != "" {
		fd, size, mod, err := openAt(j.dirFd, j.name)
		if err != nil {
			return nil, 0, time.Time{}, nil, err
		}
		return fdReader(fd), size, mod, func() { closeFd(fd) }, nil
	}
	f, err := j.open()
	if err != nil {
		return nil, 0, time.Time{}, nil, err
	}
	return f, j.size, j.mod, func() { f.Close() }, nil
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

// grepPool runs grepWorkers over files the walk submits.
type grepPool struct {
	jobs chan grepJob
	wg   sync.WaitGroup
}

func newGrepPool(sr *searcher, n int) *grepPool {
	p := &grepPool{jobs: make(chan grepJob, 64*n)}
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w := newGrepWorker(sr)
			for j := range p.jobs {
				w.run(j)
			}
			w.flush()
		}()
	}
	return p
}

func (p *grepPool) submit(j grepJob) { p.jobs <- j }

// wait closes the queue and waits for every worker to finish.
func (p *grepPool) wait() {
	close(p.jobs)
	p.wg.Wait()
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
