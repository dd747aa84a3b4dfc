package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestReapOrphans(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	sleeper := func(t *testing.T) (*exec.Cmd, proc) {
		t.Helper()
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		p, err := readProc(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, p
	}
	self, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	orphan, orphanProc := sleeper(t)
	_, keptProc := sleeper(t)

	// A record whose owner is gone (same PID, other start time: the PID was
	// reused) and one whose owner is this live process.
	dead := proc{pid: self.pid, start: self.start + 1}
	if err := os.MkdirAll(recordDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	deadRecord := filepath.Join(recordDir(), "dead")
	liveRecord := filepath.Join(recordDir(), "live")
	write := func(path string, ps ...proc) {
		var s string
		for _, p := range ps {
			s += formatProc(p) + "\n"
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(deadRecord, dead, orphanProc)
	write(liveRecord, self, keptProc)

	reapOrphans()

	var exitErr *exec.ExitError
	if err := orphan.Wait(); !errors.As(err, &exitErr) {
		t.Errorf("orphan of a dead owner: wait = %v, want it killed", err)
	}
	if !alive(keptProc) {
		t.Errorf("child of a live owner was killed")
	}
	if _, err := os.Stat(deadRecord); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead owner's record not removed: %v", err)
	}
	if _, err := os.Stat(liveRecord); err != nil {
		t.Errorf("live owner's record removed: %v", err)
	}
}

func TestRecordChildren(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	path, err := recordChildren(sleep)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	procs := parseProcs(data)
	if len(procs) != 2 || procs[0].pid != os.Getpid() || procs[1].pid != cmd.Process.Pid {
		t.Fatalf("record = %+v, want this process then pid %d", procs, cmd.Process.Pid)
	}
}
