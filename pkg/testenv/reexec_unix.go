//go:build unix

package testenv

import (
	"os"
	"syscall"
)

// reexecWith replaces the process with itself, with one more environment
// variable. It returns only on failure.
func reexecWith(kv string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, append(os.Environ(), kv))
}
