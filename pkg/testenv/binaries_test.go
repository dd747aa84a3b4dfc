package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindBinaries(t *testing.T) {
	root := t.TempDir()
	cacheHome := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	write := func(t *testing.T, path string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "go.mod"), 0o644)
	for _, dir := range []string{"bin/k8s/1.37.1", "explicit", "assets"} {
		write(t, filepath.Join(root, dir, "kube-apiserver"), 0o755)
		write(t, filepath.Join(root, dir, "etcd"), 0o755)
	}
	write(t, filepath.Join(root, "noexec", "kube-apiserver"), 0o644)
	write(t, filepath.Join(root, "noexec", "etcd"), 0o755)
	write(t, filepath.Join(cacheHome, "opkit/k8s/1.36.0/kube-apiserver"), 0o755)
	write(t, filepath.Join(cacheHome, "opkit/k8s/1.36.0/etcd"), 0o755)
	workDir := filepath.Join(root, "pkg", "deep")
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, dir, assets, workDir, version string
		wantDir                             string
		wantErr                             []string
	}{
		{name: "module root", workDir: workDir, version: "1.37.1", wantDir: "bin/k8s/1.37.1"},
		{name: "assets win over module root", assets: filepath.Join(root, "assets"), workDir: workDir, version: "1.37.1", wantDir: "assets"},
		{name: "explicit wins over assets", dir: filepath.Join(root, "explicit"), assets: filepath.Join(root, "assets"), workDir: workDir, version: "1.37.1", wantDir: "explicit"},
		{name: "shared directory when the module root has none", workDir: workDir, version: "1.36.0", wantDir: "shared:1.36.0"},
		{name: "version not built", workDir: workDir, version: "1.36.3",
			wantErr: []string{"opkit/k8s/1.36.3/kube-apiserver", "nor in " + filepath.Join(root, "bin/k8s/1.36.3"), "make envtest", "go run github.com/opkit-dev/opkit/cmd/opkit envtest", "the shared directory"}},
		{name: "assets empty", assets: filepath.Join(root, "nothing"), workDir: workDir, version: "1.37.1",
			wantErr: []string{"nothing/kube-apiserver", "KUBEBUILDER_ASSETS", "make envtest"}},
		{name: "not executable", dir: filepath.Join(root, "noexec"), workDir: workDir, version: "1.37.1",
			wantErr: []string{"noexec/kube-apiserver is not an executable file", "Options.BinaryDir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findBinaries(tt.dir, tt.assets, tt.workDir, tt.version)
			if len(tt.wantErr) > 0 {
				if !errors.Is(err, ErrBinariesMissing) {
					t.Fatalf("err = %v, want ErrBinariesMissing", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, tt.wantDir)
			if v, ok := strings.CutPrefix(tt.wantDir, "shared:"); ok {
				dir = filepath.Join(cacheHome, "opkit", "k8s", v)
			}
			want := binaries{dir: dir, apiServer: filepath.Join(dir, "kube-apiserver"), etcd: filepath.Join(dir, "etcd")}
			if got != want {
				t.Errorf("findBinaries = %+v, want %+v", got, want)
			}
		})
	}
}

func TestFindBinariesNoModule(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, err := findBinaries("", "", "/", "1.37.1")
	if err == nil || !strings.Contains(err.Error(), "KUBEBUILDER_ASSETS") {
		t.Fatalf("err = %v, want an error that suggests KUBEBUILDER_ASSETS", err)
	}
}

func TestNamespacePrefix(t *testing.T) {
	tests := map[string]string{
		"TestFoo":                      "testfoo-",
		"TestFoo/sub_case#01":          "testfoo-sub-case-01-",
		"///":                          "test-",
		strings.Repeat("a", 100):       strings.Repeat("a", 56) + "-",
		strings.Repeat("a", 55) + "/b": strings.Repeat("a", 55) + "-",
	}
	for in, want := range tests {
		if got := namespacePrefix(in); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// Options' field docs state these defaults: the version is VersionEnv's
// when set.
func TestOptionsDefaults(t *testing.T) {
	t.Setenv(VersionEnv, "")
	var o Options
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	want := Options{Version: DefaultVersion, StartTimeout: 3 * time.Minute, StopTimeout: 20 * time.Second}
	if o.Version != want.Version || o.StartTimeout != want.StartTimeout || o.StopTimeout != want.StopTimeout {
		t.Errorf("defaults = %+v, want %+v", o, want)
	}
	t.Setenv(VersionEnv, "1.99.1")
	o = Options{}
	if err := o.defaults(); err != nil || o.Version != "1.99.1" {
		t.Errorf("defaults with %s=1.99.1: Version %q, %v; want 1.99.1", VersionEnv, o.Version, err)
	}
	t.Setenv(VersionEnv, "1.99")
	if err := (&Options{}).defaults(); !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), "--version 1.99") {
		t.Errorf("defaults with %s=1.99 (none built): %v, want ErrBinariesMissing naming the command that builds it", VersionEnv, err)
	}
}
