package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// cachedFile writes size bytes to a new file and reads them back, so that
// they are in the page cache, charged to the test's own cgroup.
func cachedFile(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs, whose pages cannot be evicted; set TMPDIR to a disk", dir)
	}
	path := filepath.Join(dir, "bin")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, size), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func resident(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := residentBytes(f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A file just written and read is cached; evicted, none of it is.
func TestEvictPageCache(t *testing.T) {
	const size = 4 << 20
	path := cachedFile(t, size)
	if n := resident(t, path); n != size {
		t.Fatalf("%d bytes of a %d-byte file just read are cached, want all", n, size)
	}
	left, err := evictPageCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := resident(t, path); left != 0 || n != 0 {
		t.Errorf("after eviction %d bytes are cached (it said %d), want none", n, left)
	}
}

// The pages of a file evicted and then read by a process started in a
// cgroup are charged to that cgroup, as a container's binary is; not
// evicted, they stay charged to whoever read them first. Needs root and a
// memory cgroup hierarchy.
func TestEvictedPagesChargedToCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make cgroups")
	}
	if _, _, err := memoryHierarchy(cgroupMount); err != nil {
		t.Skip(err)
	}
	const size = 16 << 20
	path := cachedFile(t, size)
	parent, err := newCgroupParent(cgroupMount)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := parent.remove(); err != nil {
			t.Error(err)
		}
	}()
	for _, evict := range []bool{false, true} {
		c, err := parent.child("charge", 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if evict {
			if _, err := evictPageCache(path); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("cat", path)
		if err := c.start(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		charged, err := c.cacheBytes()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.remove(); err != nil {
			t.Fatal(err)
		}
		if got := charged >= size; got != evict {
			t.Errorf("evicted %t: %d bytes of page cache charged to the cgroup after reading a %d-byte file", evict, charged, size)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name holds a space and a ')'; utime 250, stime 42 ticks.
	stat := "1234 (a b) c) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 42 0 0 20 0 8 0 100 1000000 200 18446744073709551615"
	got, err := parseStatCPU("stat", stat)
	if err != nil || got != 2.92 {
		t.Errorf("parseStatCPU = %v, %v; want 2.92", got, err)
	}
	if _, err := parseStatCPU("stat", "1234 (x) S 1"); err == nil {
		t.Error("a truncated stat line gave no error")
	}
}
