package plane

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startCmd starts cmd so that the kernel kills it (SIGKILL) when the process
// that started it ends in any way: a test binary that panics, times out or
// is killed stops nothing, and its etcd and kube-apiserver must not run on.
//
// The kernel sends that parent-death signal when the thread that forked
// the program ends, not the process; Go may end a thread whose goroutine
// locked it. So every program is forked from one goroutine that locks its
// thread and never returns.
func startCmd(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawnOnce.Do(func() { go spawner() })
	done := make(chan error)
	spawns <- spawn{cmd: cmd, done: done}
	return <-done
}

type spawn struct {
	cmd  *exec.Cmd
	done chan<- error
}

var (
	spawnOnce sync.Once
	spawns    = make(chan spawn)
)

func spawner() {
	runtime.LockOSThread() // never unlocked: the thread lives as long as the process
	for s := range spawns {
		s.done <- s.cmd.Start()
	}
}
