package localsandbox

import (
	"context"
	"os"
	"path"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// Write and Edit put the new content in a temporary file beside the target
// and rename it over the target. A process killed in between (kill -9, a
// crash, a power cut) leaves that file behind. Its name says whose it is:
//
//	.aibuddy-tmp-<pid>-<12 hex digits>-<target name, at most 64 bytes>
//
// and at start (New) the sandbox removes, in the background, every file of
// the workspace with such a name whose process is no longer running: only
// regular files, never through a symlink, never one of a live process
// (this one's or another aibuddy's), never any other name. A pid reused by
// an unrelated process keeps its file until that process ends.

const tempPrefix = ".aibuddy-tmp-"

// tempNameRE matches the temporary files this package creates.
var tempNameRE = regexp.MustCompile(`^\.aibuddy-tmp-([0-9]+)-[0-9a-f]{12}-`)

// tempNameMaxBase bounds the bytes of the target's name kept in a
// temporary file's name, so that the name stays within NAME_MAX.
const tempNameMaxBase = 64

// tempName is the temporary file for target (a slash path relative to the
// root), in the same directory.
func tempName(target string) string {
	base := path.Base(target)
	if len(base) > tempNameMaxBase {
		base = base[:tempNameMaxBase]
		for len(base) > 0 && !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
	}
	return path.Join(path.Dir(target), tempPrefix+strconv.Itoa(os.Getpid())+"-"+randHex(6)+"-"+base)
}

// staleTemp reports whether name is a temporary file of a process that has
// ended.
func staleTemp(name string) bool {
	m := tempNameRE.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}

// sweepTemps walks the workspace (not .git, not another filesystem
// mounted in it, not below Options.MaxPathDepth) and removes the stale
// temporary files (see the top of this file). It returns their paths,
// relative to the root, and stops early with ctx's error.
//
// Folders are read with the search walk's dirHandle (getdents64 on linux:
// entry types without an lstat of each entry, so a mount point is never
// asked for its attributes: a hung network mount would stall the sweep in
// that system call for ever) and reopened by their real path without
// following any link (openDirBeneath); only a file with a temporary name
// is lstat'ed, and it is removed relative to its folder's descriptor.
func (s *Sandbox) sweepTemps(ctx context.Context) ([]string, error) {
	var removed []string
	var buf []byte
	queue := []string{"."}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		rel := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		f, err := s.openDirBeneath(rel)
		if err != nil {
			continue // gone or replaced since it was listed: nothing of ours there
		}
		dir := sweepHandle(s, f, rel)
		if dir == nil {
			continue
		}
		ents, _ := dir.readDir(&buf)
		for _, e := range ents {
			child := joinDisplay(rel, e.name)
			switch {
			case e.typ.IsDir():
				if e.name == ".git" || len(splitRel(child)) >= s.maxPathDepth() || !s.sameMount(child) {
					continue
				}
				queue = append(queue, child)
			case e.typ.IsRegular() && staleTemp(e.name):
				if _, _, ok := dir.lstat(e); ok && dir.remove(e.name) == nil {
					removed = append(removed, child)
				}
			}
		}
		dir.close()
	}
	return removed, nil
}

// startTempSweep runs sweepTemps in the background until it ends or Close
// stops it.
func (s *Sandbox) startTempSweep() {
	ctx, cancel := context.WithCancel(context.Background())
	s.sweepStop = cancel
	s.sweepDone = make(chan struct{})
	go func() {
		defer close(s.sweepDone)
		s.sweptTemps, s.sweepErr = s.sweepTemps(ctx)
	}()
}

// StaleTemps waits for the sweep New started and returns the stale
// temporary files it removed (slash paths relative to the workspace), or
// ctx's error when ctx ends first. With Options.NoTempSweep it returns nil
// at once. A sweep stopped by Close returns context.Canceled.
func (s *Sandbox) StaleTemps(ctx context.Context) ([]string, error) {
	if s.sweepDone == nil {
		return nil, nil
	}
	select {
	case <-s.sweepDone:
		return s.sweptTemps, s.sweepErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
