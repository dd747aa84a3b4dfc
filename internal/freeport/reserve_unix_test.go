//go:build unix

package freeport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A port another process holds the lock of is skipped, though nothing
// listens on it yet: that process chose it and will bind it. The test
// stands in for the other process with locks of its own open files,
// which conflict with Port's as another process's would.
func TestPortSkipsPortsAnotherProcessChose(t *testing.T) {
	lockDir = t.TempDir()
	lo := ephemeralLow()
	other := map[int]bool{}
	for p := max(lo-span, 1024); p < lo; p += 2 {
		f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		other[p] = true
	}
	for range 100 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if other[p] {
			t.Fatalf("Port() = %d, which another process chose", p)
		}
	}
}
