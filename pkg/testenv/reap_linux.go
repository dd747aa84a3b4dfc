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
// a terminal's Ctrl-C reaches the test binary, which stops them in order),
// with a parent-death signal that kills them when the test binary ends
// before Stop: it panicked, timed out or was killed. Nothing then removes
// the directories it made, etcd's data among them (over 100 MB each). Start
// therefore records the processes it started and the directories it made
// in recordDir, Stop removes the record, and the next Start in any process
// kills what a dead owner left running and removes what it left on disk.

// proc identifies a process across PID reuse: its PID and its start time in
// clock ticks since boot.
type proc struct {
	pid    int
	start  uint64
	zombie bool // read from /proc, never recorded
}

func recordDir() string { return filepath.Join(os.TempDir(), "opkit-testenv") }

// recordChildren writes the record at path (a new one in recordDir if path
// is ""): this process, its children that run one of exes, and dirs. It
// returns the record's path.
func recordChildren(path string, exes, dirs []string) (string, error) {
	self, err := readProc(os.Getpid())
	if err != nil {
		return "", err
	}
	var lines []string
	lines = append(lines, formatProc(self))
	for _, c := range childrenRunning(os.Getpid(), exes) {
		lines = append(lines, formatProc(c))
	}
	for _, d := range dirs {
		lines = append(lines, "dir "+d)
	}
	if path == "" {
		if err := os.MkdirAll(recordDir(), 0o700); err != nil {
			return "", err
		}
		f, err := os.CreateTemp(recordDir(), fmt.Sprintf("%d-%d-*", self.pid, self.start))
		if err != nil {
			return "", err
		}
		path = f.Name()
		if err := f.Close(); err != nil {
			return "", err
		}
	}
	return path, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// reapOrphans kills the processes recorded by owners that are no longer
// running, removes the directories they made, and then their records. It is
// best-effort: what it cannot read it leaves alone.
func reapOrphans() {
	entries, err := os.ReadDir(recordDir())
	if err != nil {
		return
	}
	private := privateDir(recordDir())
	for _, e := range entries {
		path := filepath.Join(recordDir(), e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		procs, dirs := parseRecord(data)
		if len(procs) == 0 || alive(procs[0]) {
			continue
		}
		for _, p := range procs[1:] {
			if alive(p) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
		if private {
			for _, d := range dirs {
				if ownDir(d) {
					_ = os.RemoveAll(d)
				}
			}
		}
		_ = os.Remove(path)
	}
}

// privateDir reports whether dir is a real directory of this user that no
// one else may write: only then are the directories its records name
// trusted enough to remove.
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// ownDir reports whether a recorded directory is one Start makes: directly
// in the temp directory, with one of its names.
func ownDir(dir string) bool {
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) {
		return false
	}
	for _, prefix := range []string{"opkit-etcd-", "opkit-apiserver-", "opkit-webhook-"} {
		if strings.HasPrefix(filepath.Base(dir), prefix) {
			return true
		}
	}
	return false
}

// alive reports whether p is still the same running process: a zombie,
// which no parent has reaped yet, has ended.
func alive(p proc) bool {
	now, err := readProc(p.pid)
	return err == nil && now.start == p.start && !now.zombie
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
// which may itself hold spaces), and whether it is a zombie (field 3).
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
	return ppid, proc{pid: pid, start: start, zombie: f[0] == "Z"}, nil
}

func formatProc(p proc) string { return fmt.Sprintf("%d %d", p.pid, p.start) }

// parseRecord reads a record: processes ("pid start", the owner first) and
// directories ("dir path"). A record it cannot read whole yields nothing.
func parseRecord(data []byte) (procs []proc, dirs []string) {
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if dir, ok := strings.CutPrefix(line, "dir "); ok {
			dirs = append(dirs, dir)
			continue
		}
		var p proc
		if _, err := fmt.Sscanf(line, "%d %d", &p.pid, &p.start); err != nil {
			return nil, nil
		}
		procs = append(procs, p)
	}
	return procs, dirs
}
