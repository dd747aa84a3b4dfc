//go:build !unix

package plane

import (
	"errors"
	"syscall"
)

func processAttributes() *syscall.SysProcAttr { return nil }

var errNoSuspend = errors.New("suspending a process needs SIGSTOP, which this OS lacks")

func (p *process) suspend() error { return errNoSuspend }

func (p *process) resume() error { return nil }
