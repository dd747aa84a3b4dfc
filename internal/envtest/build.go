package envtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// target is how one binary is built and checked.
type target struct {
	pkg     string
	ldflags string
	// check runs the binary with these arguments; its first line must be
	// want.
	check []string
	want  string
}

func targets(version string) map[string]target {
	const v = "k8s.io/component-base/version"
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	versioned := strings.Join([]string{
		"-s -w",
		"-X " + v + ".gitVersion=v" + version,
		"-X " + v + ".gitMajor=" + major,
		"-X " + v + ".gitMinor=" + minor,
		"-X " + v + ".gitTreeState=clean",
		"-X " + v + ".buildDate=1970-01-01T00:00:00Z",
	}, " ")
	return map[string]target{
		"kube-apiserver": {pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: versioned,
			check: []string{"--version"}, want: "Kubernetes v" + version},
		"etcd": {pkg: "go.etcd.io/etcd/server/v3", ldflags: "-s -w"},
		"kubectl": {pkg: "k8s.io/kubernetes/cmd/kubectl", ldflags: versioned,
			check: []string{"version", "--client"}, want: "Client Version: v" + version},
	}
}

// build compiles todo from version's pins, written into a module of their
// own, and moves them into dir once all are built and checked.
func build(ctx context.Context, dir, version string, todo []string, log io.Writer) error {
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("envtest: go is not on PATH: install Go 1.26 (https://go.dev/doc/install) and run again")
	}
	fmt.Fprintf(log, "envtest: building %s (Kubernetes v%s) from source into %s\n", strings.Join(todo, ", "), version, dir)
	fmt.Fprintln(log, "envtest: a cold build takes about fifteen minutes on two cores (longer on a busy machine); later runs, by any project, reuse the binaries")
	mod, err := os.MkdirTemp("", "opkit-envtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	goMod, goSum := pinsOf(version)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), goMod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), goSum, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(log, "envtest: downloading modules (pinned)")
	if out, err := goCmd(ctx, mod, "mod", "download"); err != nil {
		return fmt.Errorf("envtest: download the pinned modules from the Go module proxy: %w\n%s\nCheck that the proxy is reachable (go env GOPROXY, GOFLAGS, network) and run again", err, tail(out))
	}
	ts := targets(version)
	for _, name := range todo {
		t := ts[name]
		start := time.Now()
		fmt.Fprintf(log, "envtest: go build %s\n", t.pkg)
		out := filepath.Join(mod, "out", name)
		if o, err := goCmd(ctx, mod, "build", "-trimpath", "-ldflags", t.ldflags, "-o", out, t.pkg); err != nil {
			return fmt.Errorf("envtest: build %s: %w\n%s\nIf a module could not be fetched, check that the Go module proxy is reachable; then run again", name, err, tail(o))
		}
		if t.check != nil {
			got, _ := exec.CommandContext(ctx, out, t.check...).CombinedOutput()
			first, _, _ := strings.Cut(string(got), "\n")
			if first != t.want {
				return fmt.Errorf("envtest: built %s reports %q, want %q", name, first, t.want)
			}
		}
		fmt.Fprintf(log, "envtest: built %s in %s\n", name, time.Since(start).Round(time.Second))
	}
	// A stale stamp must not vouch for binaries built from other pins: drop
	// it before replacing any binary, write it once all are in place.
	if err := os.Remove(filepath.Join(dir, stampFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("envtest: %w", err)
	}
	for _, name := range todo {
		if err := move(filepath.Join(mod, "out", name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("envtest: install %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(Stamp(version)+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "envtest: done: %s\n", dir)
	return nil
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	return cmd.CombinedOutput()
}

// move renames from to to, or copies it where they are on different file
// systems (the temporary directory and the cache often are).
func move(from, to string) error {
	if err := os.Rename(from, to); err == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, to)
}

// tail returns the last lines of a command's output, where its error is.
func tail(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
