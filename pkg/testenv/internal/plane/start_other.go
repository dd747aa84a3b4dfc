//go:build !linux

package plane

import "os/exec"

// startCmd starts cmd. Outside Linux there is no parent-death signal: a
// test binary that dies before Stop leaves its programs running.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
