package scaffold

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestInitVendored: opkit init --opkit-vendor copies what the project
// builds with, and no test, into third_party/opkit, which go.mod points at
// by a relative path; every opkit package the copy's files import, and
// every file they embed, is in it; opkit upgrade of the project renders
// what init made and says how to drop the copy. cmd/opkit's TestScaffold
// runs such a project's make test in a fresh directory.
func TestInitVendored(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go mod tidy and go list in a generated project")
	}
	t.Setenv("GOFLAGS", "") // not the GOFLAGS a make of opkit passes down
	dir := t.TempDir()
	root := opkitRoot(t)
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: DevelVersion, OpkitVendor: root}
	if err := Init(t.Context(), dir, opts); err != nil {
		t.Fatal(err)
	}

	checkRelativeReplaces(t, dir)
	copied := filepath.Join(dir, filepath.FromSlash(vendorDir))
	checkCopy(t, copied)
	for _, f := range []string{"LICENSE", "go.mod", "go.sum", "hack/image/go.mod", "cmd/opkit/main.go", "internal/scaffold/templates/init/go.mod.tmpl"} {
		if _, err := os.Stat(filepath.Join(copied, filepath.FromSlash(f))); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
	// opkit envtest builds the control plane of each Kubernetes version
	// pinned in its embedded pins.
	pins, err := os.ReadDir(filepath.Join(root, "internal", "envtest", "pins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pins {
		if _, err := os.Stat(filepath.Join(copied, "internal", "envtest", "pins", v.Name(), "go.sum.txt")); err != nil {
			t.Errorf("the copy lacks the pins of Kubernetes %s: %v", v.Name(), err)
		}
	}
	if rev, err := exec.CommandContext(t.Context(), "git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		note, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(vendorNote)))
		if !bytes.Contains(note, bytes.TrimSpace(rev)) {
			t.Errorf("%s does not name the checkout's commit %s:\n%s", vendorNote, rev, note)
		}
	}
	for _, f := range []string{vendorNote, "README.md"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if !bytes.Contains(b, []byte("go mod edit -dropreplace github.com/opkit-dev/opkit -dropreplace github.com/opkit-dev/opkit/hack/image")) {
			t.Errorf("%s does not say how to drop the copy:\n%s", f, b)
		}
	}

	if b, _ := os.ReadFile(filepath.Join(dir, "Dockerfile")); !bytes.Contains(b, []byte("COPY third_party/ third_party/\nRUN go mod download")) {
		t.Errorf("the Dockerfile does not copy third_party/ before go mod download, which needs the copy's go.mod:\n%s", b)
	}

	// go list fails on a missing package or embedded file.
	list := exec.CommandContext(t.Context(), "go", "list", "-deps", "./...", opkitModule+"/cmd/opkit", imageModule)
	list.Dir = dir
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("go list in the project: %v\n%s", err, out)
	}

	var out strings.Builder
	if err := Upgrade(t.Context(), dir, UpgradeOptions{DryRun: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Nothing to change", "the copy in " + vendorDir, "drop the copy as " + vendorNote} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("opkit upgrade of a vendored project does not say %q:\n%s", want, out.String())
		}
	}
	checkDropped(t, dir)
}

// checkDropped drops the copy of opkit from the project in dir as its
// note says, up to go get (there is no release to get), then checks that
// opkit upgrade takes the copy out of the Dockerfile and the README.
func checkDropped(t *testing.T, dir string) {
	t.Helper()
	drop := exec.CommandContext(t.Context(), "go", "mod", "edit", "-dropreplace", opkitModule, "-dropreplace", imageModule)
	drop.Dir = dir
	if out, err := drop.CombinedOutput(); err != nil {
		t.Fatalf("go mod edit: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(vendorDir))); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Upgrade(t.Context(), dir, UpgradeOptions{Out: &out}); err != nil {
		t.Fatalf("upgrade after dropping the copy: %v\n%s", err, out.String())
	}
	for _, f := range []string{"Dockerfile", "README.md"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); bytes.Contains(b, []byte("third_party")) {
			t.Errorf("after the copy is dropped, opkit upgrade leaves %s naming third_party:\n%s\nupgrade said:\n%s", f, b, out.String())
		}
	}
}

// checkRelativeReplaces fails t unless dir's go.mod replaces opkit and its
// image builder with the copy, by relative paths.
func checkRelativeReplaces(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{opkitModule: vendorReplace, imageModule: vendorReplace + "/hack/image"}
	for _, r := range f.Replace {
		if want[r.Old.Path] != r.New.Path {
			t.Errorf("go.mod replaces %s with %s, want %s", r.Old.Path, r.New.Path, want[r.Old.Path])
		}
		delete(want, r.Old.Path)
	}
	if len(want) > 0 {
		t.Errorf("go.mod does not replace %v:\n%s", want, b)
	}
}

// checkCopy fails t if the copy at root holds a test or testdata, or if a
// Go file in it, whatever its build constraints, imports an opkit package
// the copy lacks.
func checkCopy(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Name() == "testdata" || strings.HasSuffix(p, "_test.go") {
			t.Errorf("the copy holds %s", rel)
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			sub, ok := strings.CutPrefix(ip, opkitModule+"/")
			if !ok {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(sub))); err != nil {
				t.Errorf("%s imports %s, which the copy lacks", rel, ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
