//go:build unix

package plane

import "syscall"

func processAttributes() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// suspend freezes the program (SIGSTOP) until resume.
func (p *process) suspend() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// resume resumes a suspended program (SIGCONT); a running one is unaffected.
func (p *process) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }
