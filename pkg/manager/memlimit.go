package manager

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// memoryLimitShare is the share of the cgroup's memory limit that
// SetMemoryLimit gives the Go runtime: the rest is for what the runtime
// does not count (the binary's mapped pages, C memory) and for the heap
// overshooting between two collections.
const memoryLimitShare = 0.85

// SetMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) to 85 % of the memory limit of the process's
// cgroup (v2 memory.max, v1 memory.limit_in_bytes, the lowest of the
// cgroup's and its ancestors'), so that the garbage collector collects
// harder as the heap nears the container's limit instead of the kernel
// killing the container: with the default GOGC the heap may reach twice
// what is live. It sets nothing, and returns 0, when GOMEMLIMIT is set
// (the runtime took it at start) or the cgroup has no memory limit. It
// returns the limit it set, in bytes.
//
// It changes a process-wide setting, so the manager does not call it:
// main calls it once, before New, as the sample operator's and the
// scaffolded main do. Options.Webhook bounds what a burst of webhook
// requests costs within this limit (see package webhook).
func SetMemoryLimit() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil // not Linux
		}
		return 0, fmt.Errorf("manager: set memory limit: %w", err)
	}
	limit, err := cgroupMemoryLimit(os.DirFS("/sys/fs/cgroup"), string(self))
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// cgroupMemoryLimit returns the memory limit of the cgroup that self
// (/proc/self/cgroup) names, in root (/sys/fs/cgroup): the lowest limit
// of the cgroup and its ancestors, v1's when a v1 hierarchy has the
// memory controller, else v2's; 0 when none is set. In a container the
// cgroup's own directory may be the mount's root (a cgroup namespace, or
// runc's v1 mounts), so a path that does not exist is looked up by its
// ancestors' and the root's files.
func cgroupMemoryLimit(root fs.FS, self string) (uint64, error) {
	var v1, v2 string
	sc := bufio.NewScanner(strings.NewReader(self))
	for sc.Scan() {
		id, rest, _ := strings.Cut(sc.Text(), ":")
		controllers, p, _ := strings.Cut(rest, ":")
		switch {
		case id == "0" && controllers == "":
			v2 = p
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			v1 = p
		}
	}
	switch {
	case v1 != "": // a v1 memory controller, even beside a v2 hierarchy
		return lowestLimit(root, "memory", v1, "memory.limit_in_bytes")
	case v2 != "":
		return lowestLimit(root, ".", v2, "memory.max")
	}
	return 0, nil
}

// lowestLimit returns the lowest limit in file of the cgroup at p under
// mount and of its ancestors, 0 for none.
func lowestLimit(root fs.FS, mount, p, file string) (uint64, error) {
	var lowest uint64
	for dir := path.Clean("/" + p); ; dir = path.Dir(dir) {
		b, err := fs.ReadFile(root, path.Join(mount, dir, file))
		if err == nil {
			limit, err := parseLimit(strings.TrimSpace(string(b)))
			if err != nil {
				return 0, fmt.Errorf("manager: set memory limit: %s: %w", path.Join(mount, dir, file), err)
			}
			if limit != 0 && (lowest == 0 || limit < lowest) {
				lowest = limit
			}
		}
		if dir == "/" {
			return lowest, nil
		}
	}
}

// noLimitV1 is where a cgroup v1 limit counts as none: unset, it reads
// as the largest page-aligned int64.
const noLimitV1 = 1 << 62

func parseLimit(s string) (uint64, error) {
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n >= noLimitV1 {
		return 0, nil
	}
	return n, nil
}
