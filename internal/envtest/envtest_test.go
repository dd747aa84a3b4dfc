package envtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// The embedded pins are hack/tools/envtest's, where they are edited.
func TestPinsMatchHackTools(t *testing.T) {
	root, err := testenv.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for name, embedded := range map[string][]byte{"go.mod": goMod, "go.sum": goSum} {
		onDisk, err := os.ReadFile(filepath.Join(root, "hack", "tools", "envtest", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(onDisk, embedded) {
			t.Errorf("internal/envtest/pins/%s.txt differs from hack/tools/envtest/%s: run 'make envtest-pins' to copy the pins", name, name)
		}
	}
	if !strings.Contains(string(goMod), "k8s.io/kubernetes v"+Version) {
		t.Errorf("the pins do not require k8s.io/kubernetes v%s (testenv.DefaultVersion)", Version)
	}
}

// A directory whose stamp matches the pins and holds every binary needs
// no build; one built from other pins needs all of them; a lost binary
// alone is rebuilt.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if got := missing(dir); len(got) != len(Binaries) {
		t.Errorf("missing(empty) = %v, want all", got)
	}
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte("other pins\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := missing(dir); len(got) != len(Binaries) {
		t.Errorf("missing(other pins) = %v, want all", got)
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(Stamp()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := missing(dir); len(got) != 0 {
		t.Errorf("missing(built) = %v, want none", got)
	}
	if err := os.Remove(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if got := missing(dir); len(got) != 1 || got[0] != "etcd" {
		t.Errorf("missing(no etcd) = %v, want [etcd]", got)
	}
}

// The stamp is the one hack/setup-envtest.sh wrote, so the binaries it
// built are reused: sha256 of go.mod then go.sum.
func TestStampOfTheBinariesInUse(t *testing.T) {
	dir, err := testenv.BinaryDir(Version)
	if err != nil {
		t.Skipf("no control plane built: %v", err)
	}
	stamp, err := os.ReadFile(filepath.Join(dir, stampFile))
	if err != nil {
		t.Skipf("%s has no stamp (KUBEBUILDER_ASSETS?)", dir)
	}
	if got := strings.TrimSpace(string(stamp)); got != Stamp() {
		t.Errorf("the binaries in %s were built from pins %s, not the embedded ones (%s)", dir, got, Stamp())
	}
}
