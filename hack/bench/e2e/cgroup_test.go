package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The memory hierarchy is cgroup v2's where its root enables the memory
// controller, else v1's (as on a hybrid host, whose v2 mount has none).
func TestMemoryHierarchy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantDir string
		want    cgroupFiles
		wantErr bool
	}{
		{name: "v2", files: map[string]string{"cgroup.subtree_control": "cpu io memory pids\n"}, want: cgroupV2},
		{name: "v1", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, wantDir: "memory", want: cgroupV1},
		{name: "hybrid", files: map[string]string{"cgroup.subtree_control": "cpu\n", "memory/memory.limit_in_bytes": "1\n"}, wantDir: "memory", want: cgroupV1},
		{name: "none", files: map[string]string{"cgroup.subtree_control": "cpu memoryless\n"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mount := t.TempDir()
			for p, c := range tc.files {
				writeFile(t, filepath.Join(mount, p), c)
			}
			dir, files, err := memoryHierarchy(mount)
			if (err != nil) != tc.wantErr {
				t.Fatalf("memoryHierarchy: %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (dir != filepath.Join(mount, tc.wantDir) || files != tc.want) {
				t.Errorf("memoryHierarchy = %s, %+v; want %s, %+v", dir, files, filepath.Join(mount, tc.wantDir), tc.want)
			}
		})
	}
}

func TestOOMKills(t *testing.T) {
	for files, content := range map[cgroupFiles]string{
		cgroupV1: "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		cgroupV2: "low 0\nhigh 0\nmax 7\noom 3\noom_kill 2\noom_group_kill 0\n",
	} {
		c := &cgroup{dir: t.TempDir(), files: files}
		writeFile(t, filepath.Join(c.dir, files.events), content)
		if n, err := c.oomKills(); err != nil || n != 2 {
			t.Errorf("%s: oomKills = %d, %v; want 2", files.events, n, err)
		}
	}
	c := &cgroup{dir: t.TempDir(), files: cgroupV1}
	writeFile(t, filepath.Join(c.dir, cgroupV1.events), "oom_kill_disable 0\nunder_oom 0\n")
	if _, err := c.oomKills(); err == nil {
		t.Error("an events file without oom_kill gave no error: an OOM kill would go unseen")
	}
}

// The program runs under the pid that entered the cgroup: nothing of it
// runs outside.
func TestCgroupStart(t *testing.T) {
	c := &cgroup{dir: t.TempDir(), files: cgroupV1}
	procs := filepath.Join(c.dir, "cgroup.procs")
	writeFile(t, procs, "")
	cmd := exec.Command("/bin/sh", "-c", `echo "$$ $0 $1"`, "a b", "c")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := c.start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if got, _ := os.ReadFile(procs); strings.TrimSpace(string(got)) != pid {
		t.Errorf("cgroup.procs holds %q, want the pid %s", got, pid)
	}
	if want := pid + " a b c\n"; out.String() != want {
		t.Errorf("the program printed %q, want %q: its pid and its arguments as given", out.String(), want)
	}
}
