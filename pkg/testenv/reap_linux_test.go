package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	mkdir := func(name string) string {
		dir := filepath.Join(os.TempDir(), name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	deadData, liveData, notOurs := mkdir("opkit-etcd-dead"), mkdir("opkit-etcd-live"), mkdir("precious")
	write := func(path string, dirs []string, ps ...proc) {
		var s string
		for _, p := range ps {
			s += formatProc(p) + "\n"
		}
		for _, d := range dirs {
			s += "dir " + d + "\n"
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A record names only directories Start makes: one named otherwise,
	// or outside the temp directory, is left alone.
	write(deadRecord, []string{deadData, notOurs, "/"}, dead, orphanProc)
	write(liveRecord, []string{liveData}, self, keptProc)

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
	if _, err := os.Stat(deadData); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead owner's directory not removed: %v", err)
	}
	for _, kept := range []string{liveData, notOurs} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
}

// Records in a directory others may write are not trusted to name what to
// remove.
func TestReapOrphansTrustsOnlyAPrivateRecordDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.MkdirAll(recordDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(recordDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(os.TempDir(), "opkit-etcd-planted")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	record := "1 1\ndir " + data + "\n" // PID 1's start time is never 1 tick: a dead owner
	if err := os.WriteFile(filepath.Join(recordDir(), "planted"), []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	reapOrphans()
	if _, err := os.Stat(data); err != nil {
		t.Errorf("a directory named in a world-writable record dir was removed: %v", err)
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

	path, err := recordChildren("", []string{sleep}, []string{"/tmp/opkit-etcd-1"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	procs, dirs := parseRecord(data)
	if len(procs) != 2 || procs[0].pid != os.Getpid() || procs[1].pid != cmd.Process.Pid {
		t.Fatalf("record = %+v, want this process then pid %d", procs, cmd.Process.Pid)
	}
	if len(dirs) != 1 || dirs[0] != "/tmp/opkit-etcd-1" {
		t.Errorf("record's directories = %q, want the one given", dirs)
	}
	// Each environment has a record of its own: a process may run several.
	second, err := recordChildren("", []string{sleep}, nil)
	if err != nil || second == path {
		t.Errorf("second record = %q, %v, want a new one beside %q", second, err, path)
	}
}

// panicChildEnv makes TestChildPanicsHoldingTheControlPlane run: it is the
// test process that TestPanickingOwnerLeavesNothing runs and lets die.
const panicChildEnv = "OPKIT_TESTENV_PANIC_CHILD"

// The child: it prints what the package's control plane runs and the
// directories it made, then panics from a goroutine, as a cache's report of
// a read nobody registered does, so that neither Cleanup nor Stop runs.
func TestChildPanicsHoldingTheControlPlane(t *testing.T) {
	if os.Getenv(panicChildEnv) == "" {
		t.Skip("run by TestPanickingOwnerLeavesNothing")
	}
	for _, p := range childrenRunning(os.Getpid(), []string{env.bins.apiServer, env.bins.etcd}) {
		fmt.Printf("pid %d %d\n", p.pid, p.start)
	}
	for _, dir := range env.dirs() {
		fmt.Printf("dir %s\n", dir)
	}
	done := make(chan struct{})
	go func() { panic("the child dies holding its control plane") }()
	<-done
}

// A test binary that panics (or times out, or is killed) stops nothing and
// removes nothing: its etcd and kube-apiserver must not outlive it, and
// the next Start, in any process, removes the directories it left (etcd's
// data alone is over 100 MB, and make test left one per run).
func TestPanickingOwnerLeavesNothing(t *testing.T) {
	if os.Getenv(panicChildEnv) != "" {
		t.Skip("this is the child")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildPanicsHoldingTheControlPlane$", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChildEnv+"=1")
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("the child passed; output:\n%s", out)
	}
	var procs []proc
	var dirs []string
	for _, line := range strings.Split(string(out), "\n") {
		var p proc
		if _, err := fmt.Sscanf(line, "pid %d %d", &p.pid, &p.start); err == nil {
			procs = append(procs, p)
		}
		if dir, ok := strings.CutPrefix(line, "dir "); ok {
			dirs = append(dirs, dir)
		}
	}
	if len(procs) != 2 || len(dirs) != 3 {
		t.Fatalf("the child reported processes %v and directories %v, want etcd and kube-apiserver, and etcd's data, the certificates and the webhook's; output:\n%s", procs, dirs, out)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if alive(p) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	// The kernel kills them as their owner dies; they may take a moment to
	// end.
	deadline := time.Now().Add(time.Minute)
	for _, p := range procs {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(p) {
			t.Errorf("process %d outlived the test binary that started it", p.pid)
		}
	}
	reapOrphans()
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind by a dead owner, after the next Start's sweep: %v", dir, err)
			_ = os.RemoveAll(dir)
		}
	}
}
