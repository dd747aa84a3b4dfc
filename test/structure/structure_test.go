// Package structure checks the shape of the module's code that no
// compiler enforces: internal/ is the floor (nothing in it imports pkg/),
// and no Go file outgrows the house style's "Files under ~600 lines".
package structure

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module root, two levels above this package.
const root = "../.."

const module = "github.com/opkit-dev/opkit"

// internal/ is what opkit's public packages are built on, so an import
// from it of pkg/ runs back up: the public package could not then move
// its implementation under internal/ without a cycle. Only the packages'
// own files count (go list's Imports); their tests may import pkg/, as a
// user's would, to start a control plane with pkg/testenv or to drive an
// internal package through the public one it serves.
func TestInternalImportsNoPkg(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./internal/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./internal/...: %v\n%s", err, stderr.Bytes())
	}
	packages := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		packages++
		for _, imp := range fields[1:] {
			if imp == module+"/pkg" || strings.HasPrefix(imp, module+"/pkg/") {
				t.Errorf("%s imports %s: internal/ must not import pkg/; move the code it needs under internal/ (the pkg/ package can build on it), or move the importer under the pkg/ package that uses it (pkg/<name>/internal/)", fields[0], imp)
			}
		}
	}
	if packages == 0 {
		t.Fatal("go list ./internal/... listed no packages")
	}
}

// maxLines is the house style's "Files under ~600 lines" (with functions
// short, a longer file holds more than one thing), for the Go files people
// write: tests and generated files are not held to it.
const maxLines = 600

func TestFilesUnderMaxLines(t *testing.T) {
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		n, generated, err := countLines(path)
		if err != nil {
			return err
		}
		files++
		if !generated && n > maxLines {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, more than %d (the house style: \"Files under ~600 lines\"): split it into files by what each part does", rel, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("found no Go files under the module root")
	}
}

// countLines returns the number of lines of the Go file at path, and
// whether it says it is generated (https://go.dev/s/generatedcode).
func countLines(path string) (n int, generated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		n++
		line := s.Text()
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
			generated = true
		}
	}
	return n, generated, s.Err()
}
