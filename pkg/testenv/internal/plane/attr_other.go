//go:build !unix

package plane

import "syscall"

func processAttributes() *syscall.SysProcAttr { return nil }
