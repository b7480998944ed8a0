package coretools

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DataQuota bounds the total size of the data folder that holds execute's
// full output files. Before a full output file grows, execute measures
// every regular file under Root (call records, full outputs, offloaded
// compactions, anything else) and, when the folder would pass MaxBytes,
// removes the oldest files (by modification time) under the Evict folders
// until it fits; files anywhere else, such as the records database, count
// but are never removed. A file is never removed while this tool writes it,
// nor when it changed after the call began (another call may be writing
// it). When the folder still cannot fit more, the file stops growing and
// the result says so; so the folder can pass MaxBytes only by what other
// processes and calls running at the same time write (each call reserves
// room 64 MiB at a time), or by files outside Evict.
type DataQuota struct {
	// Root is the folder whose total counts. Default: OutputDir.
	Root string
	// MaxBytes is the bound, in bytes. Default DefaultDataDirMaxBytes
	// (10 GiB).
	MaxBytes int64
	// Evict are the folders (inside Root) whose files may be removed,
	// oldest first, to make room: full outputs and offloaded compactions,
	// which are copies a call record can do without (view_tool_call then
	// reads the record's own text). Default: OutputDir only.
	Evict []string
}

// DefaultDataDirMaxBytes is DataQuota.MaxBytes when unset: 10 GiB.
const DefaultDataDirMaxBytes = 10 << 30

// quotaStep is how much room a growing file reserves at a time, and how
// much is freed at once when the folder is full, in bytes (at most a
// sixteenth of the bound).
const quotaStep = 64 << 20

// dataQuota is a DataQuota in use by one executor.
type dataQuota struct {
	root  string
	max   int64 // bytes
	step  int64 // bytes reserved, or freed, at a time
	evict []string

	mu      sync.Mutex
	writing map[string]bool // full output files this executor is writing
}

// newDataQuota resolves q's defaults against outputDir; nil when there is
// no output folder.
func newDataQuota(q *DataQuota, outputDir string) *dataQuota {
	if outputDir == "" {
		return nil
	}
	var c DataQuota
	if q != nil {
		c = *q
	}
	if c.Root == "" {
		c.Root = outputDir
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultDataDirMaxBytes
	}
	if len(c.Evict) == 0 {
		c.Evict = []string{outputDir}
	}
	d := &dataQuota{max: c.MaxBytes, step: max(1, min(quotaStep, c.MaxBytes/16)), writing: map[string]bool{}}
	d.root, _ = filepath.Abs(c.Root)
	for _, e := range c.Evict {
		if a, err := filepath.Abs(e); err == nil {
			d.evict = append(d.evict, a)
		}
	}
	return d
}

// begin marks path as being written (never evicted) until end.
func (q *dataQuota) begin(path string) {
	q.mu.Lock()
	q.writing[path] = true
	q.mu.Unlock()
}

func (q *dataQuota) end(path string) {
	q.mu.Lock()
	delete(q.writing, path)
	q.mu.Unlock()
}

// reserve is asked by a file that needs need more bytes now and may grow
// by at most limit: it returns how many it may add (up to a step ahead, at
// most limit; less than need when the folder is full). When the folder
// cannot fit need, the oldest evictable files that changed before since
// are removed, a step's worth at once so that a file growing at the limit
// does not measure the folder for every chunk. removed counts them.
func (q *dataQuota) reserve(need, limit int64, since time.Time) (granted int64, removed int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	type cand struct {
		path string
		size int64
		mod  time.Time
	}
	var total int64
	var cands []cand
	_ = filepath.WalkDir(q.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil // unreadable entries and folders: skipped, not counted
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		total += fi.Size()
		if !q.writing[p] && fi.ModTime().Before(since) && q.evictable(p) {
			cands = append(cands, cand{p, fi.Size(), fi.ModTime()})
		}
		return nil
	})
	if total+need > q.max {
		free := min(max(need, q.step), limit)
		slices.SortFunc(cands, func(a, b cand) int { return a.mod.Compare(b.mod) })
		for _, c := range cands {
			if total+free <= q.max {
				break
			}
			if os.Remove(c.path) == nil {
				total -= c.size
				removed++
				q.removeEmptyParents(filepath.Dir(c.path))
			}
		}
	}
	return max(0, min(max(need, q.step), limit, q.max-total)), removed
}

// evictable reports whether p lies inside one of the Evict folders.
func (q *dataQuota) evictable(p string) bool {
	for _, e := range q.evict {
		if strings.HasPrefix(p, e+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// removeEmptyParents removes dir and its parents while they are empty,
// up to (not including) an Evict folder.
func (q *dataQuota) removeEmptyParents(dir string) {
	for q.evictable(dir) {
		if os.Remove(dir) != nil { // not empty, or gone
			return
		}
		dir = filepath.Dir(dir)
	}
}
