package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"io/fs"
	"path"
	"slices"
	"strings"
	"text/template"
)

// templates are the files opkit writes: init/ mirrors a new project's tree
// (each file ends in .tmpl), api/ holds what create api renders, and tools/
// holds opkit's own hack/tools go.mod and go.sum (named .txt: a go.mod would
// make its directory a module of its own, which embed leaves out).
//
//go:embed all:templates
var templates embed.FS

// renamed are the init templates whose name cannot be the file's: dot
// files, which go:embed and editors handle badly.
var renamed = map[string]string{
	"gitignore":                     ".gitignore",
	"golangci.yml":                  ".golangci.yml",
	"config/crd/bases/gitkeep":      "config/crd/bases/.gitkeep",
	"github/workflows/lint.yml":     ".github/workflows/lint.yml",
	"github/workflows/test.yml":     ".github/workflows/test.yml",
	"github/workflows/test-e2e.yml": ".github/workflows/test-e2e.yml",
}

// render executes the template at name (under templates/ in tfs, the
// embedded templates if nil) with data. A Go file comes out
// gofmt-formatted, or as an error: generated code must pass gofmt whatever
// the input's lengths.
func render(tfs fs.FS, name string, data any) ([]byte, error) {
	if tfs == nil {
		tfs = templates
	}
	t, err := template.ParseFS(tfs, "templates/"+name)
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render template %s: %w", name, err)
	}
	if strings.HasSuffix(name, ".go.tmpl") {
		return formatGo(name, b.Bytes())
	}
	return b.Bytes(), nil
}

func formatGo(name string, src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", name, err)
	}
	return out, nil
}

// renderTree renders every template under dir in tfs into files, at its
// path below dir without the .tmpl suffix.
func renderTree(tfs fs.FS, dir string, data any) (files, error) {
	out := files{}
	err := fs.WalkDir(tfs, "templates/"+dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, "templates/")
		rel := strings.TrimSuffix(strings.TrimPrefix(name, dir+"/"), ".tmpl")
		if r, ok := renamed[rel]; ok {
			rel = r
		}
		b, err := render(tfs, name, data)
		if err != nil {
			return err
		}
		out[path.Clean(rel)] = b
		return nil
	})
	return out, err
}

// insertAt inserts lines before the line of file's content that holds
// marker, indented as that line, but none if the content holds the first of
// them already (so that an import, or a kind, is added once). The result of
// a Go file is gofmt-formatted.
func insertAt(file string, content []byte, marker string, lines ...string) ([]byte, error) {
	src := strings.SplitAfter(string(content), "\n")
	at := -1
	for i, l := range src {
		if strings.TrimSpace(l) == marker {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("add to %s: it has no line %q, where opkit adds its lines: put the marker back", file, marker)
	}
	if len(lines) == 0 {
		return content, nil
	}
	// Compared word by word: gofmt realigns a struct field or a key once
	// it is in.
	first := strings.Join(strings.Fields(lines[0]), " ")
	if slices.ContainsFunc(src, func(l string) bool { return strings.Join(strings.Fields(l), " ") == first }) {
		return content, nil
	}
	// A YAML list that starts empty ("resources: []", so that kustomize
	// renders a project with none) becomes a block list with its first item.
	for i := at - 1; i >= 0; i-- {
		l := strings.TrimSpace(src[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if key, ok := strings.CutSuffix(l, ": []"); ok && !strings.HasSuffix(file, ".go") {
			src[i] = strings.Replace(src[i], key+": []", key+":", 1)
		}
		break
	}
	indent := src[at][:len(src[at])-len(strings.TrimLeft(src[at], " \t"))]
	var add strings.Builder
	for _, l := range lines {
		add.WriteString(indent + l + "\n")
	}
	out := strings.Join(src[:at], "") + add.String() + strings.Join(src[at:], "")
	if strings.HasSuffix(file, ".go") {
		return formatGo(file, []byte(out))
	}
	return []byte(out), nil
}
