package manager_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/pkg/manager"
)

func TestConfigNamesEveryPlace(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := manager.Config("")
	if err == nil {
		t.Fatal("Config found a cluster where there is none")
	}
	for _, want := range []string{"--kubeconfig", "KUBECONFIG", "in-cluster", ".kube/config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestConfigOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		p := filepath.Join(dir, name)
		kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`
		if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flag, envFile := write("flag", "https://flag:6443"), write("env", "https://env:6443")
	t.Setenv("KUBECONFIG", envFile)
	t.Setenv("HOME", t.TempDir())
	for _, tt := range []struct{ flag, want string }{{flag, "https://flag:6443"}, {"", "https://env:6443"}} {
		cfg, err := manager.Config(tt.flag)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != tt.want {
			t.Errorf("Config(%q).Host = %s, want %s", tt.flag, cfg.Host, tt.want)
		}
	}
	if _, err := manager.Config(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a missing --kubeconfig file: err = %v", err)
	}
}
