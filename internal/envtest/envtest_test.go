package envtest

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// The embedded pins are hack/tools/envtest's, where they are written, one
// directory per version, each requiring its own version of
// k8s.io/kubernetes; the default version is pinned.
func TestPinsMatchHackTools(t *testing.T) {
	root, err := testenv.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "hack", "tools", "envtest"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if e.IsDir() {
			onDisk = append(onDisk, e.Name())
		}
	}
	slices.SortFunc(onDisk, compareVersions)
	if !slices.Equal(onDisk, Versions()) {
		t.Errorf("hack/tools/envtest pins %v, the embedded copy %v: run 'make envtest-pins' to copy the pins", onDisk, Versions())
	}
	for _, v := range Versions() {
		goMod, goSum := pinsOf(v)
		for name, embedded := range map[string][]byte{"go.mod": goMod, "go.sum": goSum} {
			disk, err := os.ReadFile(filepath.Join(root, "hack", "tools", "envtest", v, name))
			if err != nil {
				t.Error(err)
				continue
			}
			if !bytes.Equal(disk, embedded) {
				t.Errorf("internal/envtest/pins/%s/%s.txt differs from hack/tools/envtest/%s/%s: run 'make envtest-pins' to copy the pins", v, name, v, name)
			}
		}
		if !regexp.MustCompile(`(?m)^(require )?\s*k8s\.io/kubernetes v` + regexp.QuoteMeta(v) + `( // indirect)?$`).Match(goMod) {
			t.Errorf("the pins of %s do not require k8s.io/kubernetes v%s", v, v)
		}
	}
	if !slices.Contains(Versions(), Version) {
		t.Errorf("the default version %s (testenv.DefaultVersion) is not pinned: pinned are %v", Version, Versions())
	}
}

func TestResolve(t *testing.T) {
	vs := Versions()
	newest := vs[len(vs)-1]
	minor := newest[:strings.LastIndex(newest, ".")]
	for in, want := range map[string]string{"": Version, newest: newest, "v" + newest: newest, minor: newest} {
		if got, err := Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"1.3", "1.99", "1.99.0", minor + ".99", "latest"} {
		if got, err := Resolve(in); err == nil || !strings.Contains(err.Error(), newest) {
			t.Errorf("Resolve(%q) = %q, %v; want an error listing the pinned versions", in, got, err)
		}
	}
}

// A directory whose stamp matches the pins and holds every binary needs
// no build; one built from other pins needs all of them; a lost binary
// alone is rebuilt.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if got := missing(dir, Version); len(got) != len(Binaries) {
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
	if got := missing(dir, Version); len(got) != len(Binaries) {
		t.Errorf("missing(other pins) = %v, want all", got)
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(Stamp(Version)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := missing(dir, Version); len(got) != 0 {
		t.Errorf("missing(built) = %v, want none", got)
	}
	if err := os.Remove(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if got := missing(dir, Version); len(got) != 1 || got[0] != "etcd" {
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
	if got := strings.TrimSpace(string(stamp)); got != Stamp(Version) {
		t.Errorf("the binaries in %s were built from pins %s, not the embedded ones (%s)", dir, got, Stamp(Version))
	}
}
