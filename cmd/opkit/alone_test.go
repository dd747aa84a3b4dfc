package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// alone moves the project in dir to a new directory, deletes dir, and
// returns the new one, after checking that no file of the project names
// dir or the opkit checkout root and that go.mod replaces modules only by
// paths inside the project: built there, it resolves no path outside it.
func alone(t *testing.T, dir, root string) string {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(fresh, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fresh, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replace {
		if r.New.Version != "" || !filepath.IsLocal(r.New.Path) {
			t.Errorf("go.mod replaces %s with %s, not a directory inside the project", r.Old.Path, strings.TrimSpace(r.New.Path+" "+r.New.Version))
		}
	}
	err = filepath.WalkDir(fresh, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, outside := range []string{root, dir} {
			if bytes.Contains(b, []byte(outside)) {
				t.Errorf("%s names %s, outside the project", strings.TrimPrefix(p, fresh+"/"), outside)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow() // a build there would not show what CI's would
	}
	return fresh
}

// checkClean fails t if git's working tree in dir differs from its last
// commit: something that make test ran rewrote a file or left one that
// .gitignore does not ignore.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", "status", "--porcelain")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Errorf("make test left git's working tree changed:\n%s", out)
	}
}
