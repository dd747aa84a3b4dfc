//go:build unix

package freeport

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// held keeps the lock files open, and so their locks, until the process
// exits; the kernel drops the locks of a process that dies.
var held []*os.File

// reserve takes port p's lock for this process, and reports whether it
// did: false if another process holds it. Where the lock cannot be taken
// at all (no writable temporary directory), it reports true: the port is
// free now, and the search's random start keeps a clash rare.
func reserve(p int) bool {
	if err := os.MkdirAll(lockDir, 0o700); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return !errors.Is(err, syscall.EWOULDBLOCK)
	}
	held = append(held, f)
	return true
}
