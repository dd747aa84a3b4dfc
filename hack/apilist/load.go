package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// pkg is one listed package, loaded from export data.
type pkg struct {
	types  *types.Package
	module string          // the path of the module that holds it
	std    map[string]bool // the standard library's packages among its dependencies
}

// listed is what go list says of one package.
type listed struct {
	ImportPath string
	Export     string
	DepOnly    bool
	Standard   bool
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// load lists the packages that patterns match in dir, leaving out those
// with an internal element in their path, and loads their types from the
// export data go list -export builds.
func load(dir string, patterns []string) ([]pkg, error) {
	all, err := goList(dir, patterns)
	if err != nil {
		return nil, err
	}
	exports, std := map[string]string{}, map[string]bool{}
	var roots []listed
	for _, p := range all {
		if p.Error != nil {
			return nil, fmt.Errorf("load %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		std[p.ImportPath] = p.Standard
		if !p.DepOnly && !isInternal(p.ImportPath) {
			roots = append(roots, p)
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	var pkgs []pkg
	for _, r := range roots {
		tp, err := imp.Import(r.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", r.ImportPath, err)
		}
		p := pkg{types: tp, std: std}
		if r.Module != nil {
			p.module = r.Module.Path
		}
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.types.Path(), b.types.Path()) })
	return pkgs, nil
}

func goList(dir string, patterns []string) ([]listed, error) {
	args := append([]string{"list", "-e", "-export", "-deps",
		"-json=ImportPath,Export,DepOnly,Standard,Module,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// isInternal reports whether path has an element named internal.
func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}
