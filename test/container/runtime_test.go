package container

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// requireEnv, set to "require", turns a skip for want of an OCI runtime
// into a failure.
const requireEnv = "OPKIT_CONTAINER_TEST"

// requireRuntime skips (or, under requireEnv, fails) t where this machine
// cannot run an OCI container, saying exactly what is missing.
func requireRuntime(t *testing.T) {
	t.Helper()
	why := runtimeMissing()
	if why == "" {
		return
	}
	if os.Getenv(requireEnv) == "require" {
		t.Fatalf("cannot run an OCI container here, and %s=require: %s", requireEnv, why)
	}
	t.Skipf("cannot run an OCI container here: %s", why)
}

func runtimeMissing() string {
	if runtime.GOOS != "linux" {
		return "containers need Linux, this is " + runtime.GOOS
	}
	if os.Geteuid() != 0 {
		return fmt.Sprintf("runc needs root to make namespaces and cgroups; the test runs as uid %d", os.Geteuid())
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "no runc in PATH (apt-get install -y runc; .ci/run installs it)"
	}
	for _, ns := range []string{"mnt", "pid", "ipc", "uts"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return fmt.Sprintf("the kernel has no %s namespaces: %v", ns, err)
		}
	}
	_, v1err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes")
	_, v2err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	if v1err != nil && v2err != nil {
		return "no cgroup memory controller at /sys/fs/cgroup (neither cgroup v1's memory/ nor cgroup v2)"
	}
	return ""
}

// unpack writes img's files into dir, with their modes and owners.
func unpack(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the image's files: %w", err)
		}
		if err := unpackEntry(tr, h, filepath.Join(dir, filepath.Clean("/"+h.Name))); err != nil {
			return fmt.Errorf("unpack %s: %w", h.Name, err)
		}
	}
}

func unpackEntry(r io.Reader, h *tar.Header, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(path, mode); err != nil {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if err := errors.Join(err, f.Close()); err != nil {
			return err
		}
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, path)
	default:
		return fmt.Errorf("type %c is not unpacked by this test", h.Typeflag)
	}
	// Chmod after create: the umask must not change what the image says.
	return errors.Join(os.Chmod(path, mode), os.Lchown(path, h.Uid, h.Gid))
}

// spec is an OCI runtime config.json, edited as JSON: runc spec writes
// the defaults, the test changes what the Deployment says.
type spec map[string]any

// defaultSpec returns the config.json that runc spec writes for bundle.
func defaultSpec(bundle string) (spec, error) {
	if out, err := exec.Command("runc", "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("runc spec: %w: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("read runc spec's config.json: %w", err)
	}
	var s spec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse runc spec's config.json: %w", err)
	}
	return s, nil
}

// obj returns the object at key, made if missing.
func (s spec) obj(key string) map[string]any {
	m, ok := s[key].(map[string]any)
	if !ok {
		m = map[string]any{}
		s[key] = m
	}
	return m
}

func (s spec) write(bundle string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config.json: %w", err)
	}
	return os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
}

// withoutNamespace removes the namespace of type typ: the container then
// shares the host's.
func (s spec) withoutNamespace(typ string) {
	linux := s.obj("linux")
	nss, _ := linux["namespaces"].([]any)
	var kept []any
	for _, ns := range nss {
		if ns.(map[string]any)["type"] != typ {
			kept = append(kept, ns)
		}
	}
	linux["namespaces"] = kept
}

// container is a container that runc runs, detached, with its state under
// a directory of the test's own.
type container struct {
	id, root, bundle string
	log              string // the container's standard output and error
}

// containerID names the test process's container, unique on the machine.
func containerID() string { return fmt.Sprintf("opkit-container-test-%d", os.Getpid()) }

// run starts the bundle's container detached as id and deletes it when t
// ends, whatever happened.
func run(t *testing.T, bundle, id string) *container {
	t.Helper()
	c := &container{
		id:     id,
		root:   filepath.Join(bundle, "runc-state"),
		bundle: bundle,
		log:    filepath.Join(bundle, "container.log"),
	}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	t.Cleanup(func() {
		if out, err := exec.Command("runc", "--root", c.root, "delete", "--force", c.id).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("does not exist")) {
			t.Errorf("runc delete --force %s: %v: %s", c.id, err, out)
		}
		if t.Failed() {
			out, _ := os.ReadFile(c.log)
			t.Logf("the container's output:\n%s", out)
		}
	})
	cmd := exec.Command("runc", "--root", c.root, "run", "--detach", "--bundle", bundle, c.id)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(c.log)
		t.Fatalf("runc run %s: %v: %s", c.id, err, out)
	}
	return c
}

// pid returns the container's process id, as runc state reports it.
func (c *container) pid(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("runc", "--root", c.root, "state", c.id).Output()
	if err != nil {
		t.Fatalf("runc state %s: %v", c.id, err)
	}
	var st struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "running" {
		t.Fatalf("the container is %s, not running", st.Status)
	}
	return st.Pid
}

// procStatus returns the fields of /proc/<pid>/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// cgroupPeak returns the most memory the container's cgroup has charged
// (memory.peak in cgroup v2, memory.max_usage_in_bytes in v1: the
// processes' memory and the page cache they caused), and the file read.
func cgroupPeak(pid int) (int64, string, error) {
	return cgroupValue(pid, "memory.max_usage_in_bytes", "memory.peak")
}

// cgroupValue reads the number in the memory controller's file v1name (in
// cgroup v1) or v2name (in cgroup v2) of pid's cgroup, and names the file.
func cgroupValue(pid int, v1name, v2name string) (int64, string, error) {
	file, err := cgroupFile(pid, v1name, v2name)
	if err != nil {
		return 0, file, err
	}
	v, err := os.ReadFile(file)
	if err != nil {
		return 0, file, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	return n, file, err
}

// cgroupOOMKills returns how many processes of pid's cgroup the kernel
// killed for want of memory: oom_kill in memory.oom_control (cgroup v1,
// kernels from 4.13) or memory.events (v2).
func cgroupOOMKills(pid int) (int64, error) {
	file, err := cgroupFile(pid, "memory.oom_control", "memory.events")
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no oom_kill in %s:\n%s", file, data)
}

// cgroupFile returns the path of the memory controller's file v1name (in
// cgroup v1) or v2name (in cgroup v2) of pid's cgroup.
func cgroupFile(pid int, v1name, v2name string) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	var file string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case parts[1] == "memory":
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], v1name)
		case parts[0] == "0" && parts[1] == "" && file == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], v2name)
		}
	}
	if file == "" {
		return "", fmt.Errorf("no memory cgroup in /proc/%d/cgroup:\n%s", pid, data)
	}
	return file, nil
}
