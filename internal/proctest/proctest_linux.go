package proctest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TreeLine is the shell code whose output line identifies a command's
// processes on the host: "<pid of the shell> pid:[<namespace inode>]".
const TreeLine = "echo $$ $(readlink /proc/self/ns/pid)"

// Tree identifies a command's processes (see [TreeLine]).
type Tree struct {
	PGID int    // the shell's pid as it printed it: its process group id
	NS   string // its PID namespace, "pid:[inode]"
}

// ParseTree reads the first line of out as [TreeLine] printed it. The
// error says what the line held instead.
func ParseTree(out string) (Tree, error) {
	line, _, _ := strings.Cut(out, "\n")
	f := strings.Fields(line)
	if len(f) != 2 || !strings.HasPrefix(f[1], "pid:[") {
		return Tree{}, fmt.Errorf("proctest: no pid and PID namespace on the first line: %q", line)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid < 1 {
		return Tree{}, fmt.Errorf("proctest: no pid on the first line: %q", line)
	}
	return Tree{PGID: pid, NS: f[1]}, nil
}

// Confined reports whether the tree has a PID namespace of its own (not
// this process's).
func (t Tree) Confined() bool {
	own, _ := os.Readlink("/proc/self/ns/pid")
	return t.NS != own
}

// Proc is a live process as /proc shows it.
type Proc struct {
	PID  int
	Stat string // its /proc/<pid>/stat line: "pid (comm) state ppid pgrp …"
}

func (p Proc) String() string { return p.Stat }

// stat is one process's /proc/<pid>/stat, split after the command name:
// fields[0] is the state, [1] the parent, [2] the process group.
type stat struct {
	pid    int
	line   string
	fields []string
}

// each calls fn for every process /proc lists that is not a zombie (Z)
// or dead (X); keep filters by pid first (nil: all).
func each(keep func(pid int) bool, fn func(s stat)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || (keep != nil && !keep(pid)) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		line := strings.TrimSpace(string(b))
		i := strings.LastIndexByte(line, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		fn(stat{pid: pid, line: line, fields: f})
	}
}

// InNamespace lists the live host processes in PID namespace ns.
func InNamespace(ns string) []Proc {
	var out []Proc
	each(func(pid int) bool {
		l, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", "pid"))
		return err == nil && l == ns
	}, func(s stat) { out = append(out, Proc{s.pid, s.line}) })
	return out
}

// InGroup lists the live processes of process group pgid.
func InGroup(pgid int) []Proc {
	var out []Proc
	g := strconv.Itoa(pgid)
	each(nil, func(s stat) {
		if s.fields[2] == g {
			out = append(out, Proc{s.pid, s.line})
		}
	})
	return out
}

// WithArg lists the live processes one of whose command-line arguments
// is arg (as /proc/<pid>/cmdline shows them).
func WithArg(arg string) []Proc {
	var out []Proc
	each(func(pid int) bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		return err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg)
	}, func(s stat) { out = append(out, Proc{s.pid, s.line}) })
	return out
}

// Children lists the live children of process ppid.
func Children(ppid int) []Proc {
	var out []Proc
	p := strconv.Itoa(ppid)
	each(nil, func(s stat) {
		if s.fields[1] == p {
			out = append(out, Proc{s.pid, s.line})
		}
	})
	return out
}

// Live lists the tree's live processes: those in its PID namespace when
// it is confined, else those of its process group.
func Live(t Tree) []Proc {
	if t.Confined() {
		return InNamespace(t.NS)
	}
	return InGroup(t.PGID)
}

// WaitGone waits until list returns no process, at most within, and
// returns what is left then (nil when none). Between looks it waits on
// the kernel: a pidfd per process listed, until one of them ends (a
// process started meanwhile is found by the next look). An error opening
// or polling pidfds other than a process already gone is returned with
// what was live.
func WaitGone(list func() []Proc, within time.Duration) ([]Proc, error) {
	deadline := time.Now().Add(within)
	for {
		live := list()
		if len(live) == 0 {
			return nil, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return live, nil
		}
		ended, err := waitAny(live, left)
		if err != nil {
			return live, err
		}
		if !ended {
			return list(), nil
		}
	}
}

// waitAny waits until one of procs ends (true) or d passes (false).
func waitAny(procs []Proc, d time.Duration) (bool, error) {
	fds := make([]unix.PollFd, 0, len(procs))
	defer func() {
		for _, p := range fds {
			unix.Close(int(p.Fd))
		}
	}()
	for _, p := range procs {
		fd, err := unix.PidfdOpen(p.PID, 0)
		if errors.Is(err, unix.ESRCH) {
			return true, nil // ended before it could be watched
		}
		if err != nil {
			return false, fmt.Errorf("proctest: pidfd_open %d: %w", p.PID, err)
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline).Milliseconds()) + 1
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("proctest: poll pidfds: %w", err)
		}
		if n > 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
	}
}
