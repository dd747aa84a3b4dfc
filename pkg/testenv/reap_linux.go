package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Start runs kube-apiserver and etcd in process groups of their own (so that
// a terminal's Ctrl-C reaches the test binary, which stops them in order) and
// gives them no parent-death signal (Go delivers it when the starting
// thread, not the process, ends), so when a test binary panics, times out
// or is killed before Stop, they run on as orphans. Start therefore records
// the processes it started in recordDir, Stop removes the record, and the next
// Start in any process kills what a dead owner left behind.

// proc identifies a process across PID reuse: its PID and its start time in
// clock ticks since boot.
type proc struct {
	pid   int
	start uint64
}

func recordDir() string { return filepath.Join(os.TempDir(), "opkit-testenv") }

// recordChildren writes a record of this process's children that run one of
// the given executables. It returns the record's path ("" if there was
// nothing to record).
func recordChildren(exes ...string) (string, error) {
	self, err := readProc(os.Getpid())
	if err != nil {
		return "", err
	}
	var lines []string
	lines = append(lines, formatProc(self))
	for _, c := range childrenRunning(os.Getpid(), exes) {
		lines = append(lines, formatProc(c))
	}
	if err := os.MkdirAll(recordDir(), 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(recordDir(), fmt.Sprintf("%d-%d", self.pid, self.start))
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// reapOrphans kills the processes recorded by owners that are no longer
// running, and removes their records. It is best-effort: what it cannot read
// it leaves alone.
func reapOrphans() {
	entries, err := os.ReadDir(recordDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(recordDir(), e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		procs := parseProcs(data)
		if len(procs) == 0 || alive(procs[0]) {
			continue
		}
		for _, p := range procs[1:] {
			if alive(p) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		_ = os.Remove(path)
	}
}

// alive reports whether p is still the same running process.
func alive(p proc) bool {
	now, err := readProc(p.pid)
	return err == nil && now.start == p.start
}

func childrenRunning(ppid int, exes []string) []proc {
	want := map[string]bool{}
	for _, e := range exes {
		if r, err := filepath.EvalSymlinks(e); err == nil {
			want[r] = true
		}
	}
	dirs, _ := os.ReadDir("/proc")
	var out []proc
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || !want[exe] {
			continue
		}
		if parent, p, err := readStat(pid); err == nil && parent == ppid {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (proc, error) {
	_, p, err := readStat(pid)
	return p, err
}

// readStat returns the parent PID and the identity of a process from
// /proc/<pid>/stat (fields 4 and 22, counted after the parenthesised name,
// which may itself hold spaces).
func readStat(pid int) (ppid int, p proc, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, proc{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, proc{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0, proc{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, proc{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return ppid, proc{pid: pid, start: start}, nil
}

func formatProc(p proc) string { return fmt.Sprintf("%d %d", p.pid, p.start) }

func parseProcs(data []byte) []proc {
	var out []proc
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var p proc
		if _, err := fmt.Sscanf(line, "%d %d", &p.pid, &p.start); err != nil {
			return nil
		}
		out = append(out, p)
	}
	return out
}
