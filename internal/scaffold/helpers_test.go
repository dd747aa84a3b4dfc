package scaffold

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree is every file and directory under a root, with file contents and
// modes: what "left as it was" compares.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return out
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = info.Mode().String() + " " + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkUnchanged fails t if root's tree differs from before.
func checkUnchanged(t *testing.T, root string, before map[string]string) {
	t.Helper()
	if diff := cmp.Diff(before, tree(t, root)); diff != "" {
		t.Errorf("%s changed (-before +after):\n%s", root, diff)
	}
}

// opkitRoot is the opkit checkout these tests run in.
func opkitRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// newProject writes a project as opkit init renders it, without running
// go mod tidy (so without go.sum), into a new directory.
func newProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	opts := InitOptions{Module: "example.com/acme-operator", OpkitReplace: opkitRoot(t)}
	opts.defaults()
	fs, err := initFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
