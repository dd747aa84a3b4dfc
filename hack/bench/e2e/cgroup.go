package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A memory cgroup the benchmark creates for one operator process, so that
// the process runs under a real memory limit, as in a container: the
// kernel kills it when it needs more, and the process can read its limit
// (opkit's manager sets the Go memory limit from it). cgroup v2 and v1's
// memory hierarchy (the hybrid layout of older hosts) are both supported;
// the files differ by name only.

// cgroupFiles names a memory cgroup's files in one cgroup version.
type cgroupFiles struct {
	limit   string // the limit, in bytes
	current string // the usage now
	peak    string // the highest usage since the last reset
	events  string // holds "oom_kill N"
	// resetPeak is written to the peak file to reset it: v1 resets it for
	// every reader, v2 (Linux 6.12 or later) for the file descriptor
	// written, which cgroup keeps open to read from.
	resetPeak string
	// cache is the key in memory.stat of the page cache charged to the
	// cgroup itself (file-backed: the binary's pages among them).
	cache string
}

var (
	cgroupV2 = cgroupFiles{limit: "memory.max", current: "memory.current", peak: "memory.peak", events: "memory.events", resetPeak: "reset\n", cache: "file"}
	cgroupV1 = cgroupFiles{limit: "memory.limit_in_bytes", current: "memory.usage_in_bytes", peak: "memory.max_usage_in_bytes", events: "memory.oom_control", resetPeak: "0\n", cache: "cache"}
)

// cgroupMount is where the host mounts its cgroups.
const cgroupMount = "/sys/fs/cgroup"

// memoryHierarchy returns the root of the host's memory cgroups under
// mount and its files: cgroup v2's when its memory controller is enabled
// there, else v1's memory hierarchy.
func memoryHierarchy(mount string) (string, cgroupFiles, error) {
	if b, err := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control")); err == nil && hasWord(string(b), "memory") {
		return mount, cgroupV2, nil
	}
	v1 := filepath.Join(mount, "memory")
	if _, err := os.Stat(filepath.Join(v1, cgroupV1.limit)); err == nil {
		return v1, cgroupV1, nil
	}
	return "", cgroupFiles{}, fmt.Errorf("find the memory cgroup controller: neither %s/cgroup.subtree_control enables memory nor is v1's memory hierarchy at %s; "+
		"run the memory scenario as root on a host with cgroup v2 (memory enabled at the root) or v1's memory controller", mount, v1)
}

func hasWord(s, w string) bool {
	for f := range strings.FieldsSeq(s) {
		if f == w {
			return true
		}
	}
	return false
}

// cgroupParent is the directory of the benchmark's cgroups, one per
// operator process; remove deletes it when they are gone.
type cgroupParent struct {
	dir   string
	files cgroupFiles
}

// newCgroupParent creates the benchmark's cgroup directory under the
// host's memory hierarchy at mount, named after the benchmark's pid.
func newCgroupParent(mount string) (*cgroupParent, error) {
	root, files, err := memoryHierarchy(mount)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, fmt.Sprintf("opkit-bench-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s (the memory scenario runs as root): %w", dir, err)
	}
	if files == cgroupV2 {
		// Its children get a memory controller of their own.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory\n"), 0o644); err != nil {
			return nil, errors.Join(fmt.Errorf("enable the memory controller in %s: %w", dir, err), os.Remove(dir))
		}
	}
	return &cgroupParent{dir: dir, files: files}, nil
}

// remove deletes the benchmark's cgroup directory, which must be empty.
func (p *cgroupParent) remove() error {
	return removeCgroup(p.dir)
}

// cgroup is one operator's memory cgroup.
type cgroup struct {
	dir   string
	files cgroupFiles
	peak  *os.File // open for as long as the cgroup: see cgroupFiles.resetPeak
}

// child creates a cgroup named name with a memory limit of limit bytes.
func (p *cgroupParent) child(name string, limit int64) (*cgroup, error) {
	c := &cgroup{dir: filepath.Join(p.dir, name), files: p.files}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", c.dir, err)
	}
	err := c.write(c.files.limit, strconv.FormatInt(limit, 10))
	if err == nil && c.files == cgroupV2 {
		// Out of memory means killed, not swapping.
		if _, serr := os.Stat(filepath.Join(c.dir, "memory.swap.max")); serr == nil {
			err = c.write("memory.swap.max", "0")
		}
	}
	if err == nil {
		c.peak, err = os.OpenFile(filepath.Join(c.dir, c.files.peak), os.O_RDWR, 0)
	}
	if err != nil {
		return nil, errors.Join(err, c.remove())
	}
	return c, nil
}

func (c *cgroup) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(value+"\n"), 0o644); err != nil {
		return fmt.Errorf("set %s of cgroup %s to %s: %w", file, c.dir, value, err)
	}
	return nil
}

// start starts cmd inside c: through a shell that moves itself into c and
// then execs cmd's program, so that the program's pid is the shell's and
// nothing of the program runs outside c. (cgroup v2 could clone into c
// with SysProcAttr.UseCgroupFD; v1 cannot.)
func (c *cgroup) start(cmd *exec.Cmd) error {
	cmd.Args = append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.dir, "cgroup.procs")}, cmd.Args...)
	cmd.Path = "/bin/sh"
	return cmd.Start()
}

// usage returns the cgroup's memory usage now.
func (c *cgroup) usage() (int64, error) {
	return readInt(filepath.Join(c.dir, c.files.current))
}

// peakUsage returns the cgroup's highest memory usage since it was made
// or since the last resetPeakUsage.
func (c *cgroup) peakUsage() (int64, error) {
	b := make([]byte, 64)
	n, err := c.peak.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read %s: %w", c.peak.Name(), err)
	}
	return parseInt(c.peak.Name(), string(b[:n]))
}

// resetPeakUsage starts peakUsage afresh from the usage now.
func (c *cgroup) resetPeakUsage() error {
	if _, err := c.peak.WriteAt([]byte(c.files.resetPeak), 0); err != nil {
		return fmt.Errorf("reset %s (cgroup v2 needs Linux 6.12 or later): %w", c.peak.Name(), err)
	}
	return nil
}

// cacheBytes returns the page cache charged to c: file-backed pages, the
// binary's among them.
func (c *cgroup) cacheBytes() (int64, error) {
	path := filepath.Join(c.dir, "memory.stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, c.files.cache+" "); ok {
			return parseInt(path, v)
		}
	}
	return 0, fmt.Errorf("no %q in %s", c.files.cache, path)
}

// oomKills returns how many processes the kernel killed in c for lack of
// memory.
func (c *cgroup) oomKills() (int64, error) {
	path := filepath.Join(c.dir, c.files.events)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return parseInt(path, v)
		}
	}
	return 0, fmt.Errorf("no oom_kill count in %s (cgroup v1 has one from Linux 4.13)", path)
}

// remove closes and deletes c, which its process must have left.
func (c *cgroup) remove() error {
	var err error
	if c.peak != nil {
		err = c.peak.Close()
	}
	return errors.Join(err, removeCgroup(c.dir))
}

// removeCgroup deletes the cgroup dir, waiting a little for the kernel to
// let go of a process that just exited.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s (is a process still in it? see its cgroup.procs): %w", dir, err)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseInt(path, string(b))
}

func parseInt(path, s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return v, nil
}
