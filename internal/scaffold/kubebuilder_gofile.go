package scaffold

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// kbFile is a Go file of the kubebuilder project, parsed.
type kbFile struct {
	Rel     string // slash-separated, relative to the project
	Fset    *token.FileSet
	AST     *ast.File
	Imports map[string]string // name in the file -> import path
	Src     []byte
}

// loadGoFiles parses the project's Go files, tests and generated
// deep-copies aside, skipping bin/, vendor/, testdata/ and hidden
// directories.
func loadGoFiles(dir string) ([]*kbFile, error) { return loadFiles(dir, false) }

// loadTestFiles parses the project's test files, as loadGoFiles its
// others.
func loadTestFiles(dir string) ([]*kbFile, error) { return loadFiles(dir, true) }

func loadFiles(dir string, tests bool) ([]*kbFile, error) {
	var out []*kbFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "bin" || name == "vendor" || name == "testdata" || name == "third_party") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests || strings.HasPrefix(name, "zz_generated") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, &kbFile{Rel: filepath.ToSlash(rel), Fset: fset, AST: f, Imports: importNames(f), Src: src})
		return nil
	})
	return out, err
}

// importNames maps each import's name in f to its path.
func importNames(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = p
	}
	return m
}

// line is n's line; for a call of a method, the line of the method's
// name, so that each call of a builder chain has its own.
func (f *kbFile) line(n ast.Node) int {
	if call, ok := n.(*ast.CallExpr); ok {
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			return f.Fset.Position(sel.Sel.Pos()).Line
		}
	}
	return f.Fset.Position(n.Pos()).Line
}

// src prints n as Go source.
func (f *kbFile) src(n ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, f.Fset, n)
	return b.String()
}

// uses adds to imps the imports of f that n refers to by name.
func (f *kbFile) uses(n ast.Node, imps map[string]string) {
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				if p, ok := f.Imports[id.Name]; ok {
					imps[id.Name] = p
				}
			}
		}
		return true
	})
}

// importBlock renders imps (name -> path) as an import declaration.
func importBlock(imps map[string]string) string {
	names := make([]string, 0, len(imps))
	for n := range imps {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return imps[names[i]] < imps[names[j]] })
	var b strings.Builder
	b.WriteString("import (\n")
	for _, n := range names {
		if n == "_" {
			continue
		}
		if path.Base(imps[n]) == n {
			b.WriteString("\t" + strconv.Quote(imps[n]) + "\n")
		} else {
			b.WriteString("\t" + n + " " + strconv.Quote(imps[n]) + "\n")
		}
	}
	b.WriteString(")\n")
	return b.String()
}

// callChain unwinds a builder chain, such as
// ctrl.NewControllerManagedBy(mgr).For(&T{}).Complete(r), into its calls,
// innermost first; ok is false if e is not such a chain.
func callChain(e ast.Expr) (calls []*ast.CallExpr, ok bool) {
	for {
		call, isCall := e.(*ast.CallExpr)
		if !isCall {
			return nil, false
		}
		calls = append([]*ast.CallExpr{call}, calls...)
		sel, isSel := call.Fun.(*ast.SelectorExpr)
		if !isSel {
			return nil, false
		}
		if _, isPkg := sel.X.(*ast.Ident); isPkg {
			return calls, true
		}
		e = sel.X
	}
}

// method is the name of the method or function call calls.
func method(call *ast.CallExpr) string {
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		return fn.Sel.Name
	case *ast.Ident:
		return fn.Name
	}
	return ""
}

// objectType is the Go type of &pkg.T{} or new(pkg.T) as source, "*pkg.T";
// ok is false for any other expression.
func objectType(f *kbFile, e ast.Expr) (typ string, kind string, ok bool) {
	var t ast.Expr
	switch x := e.(type) {
	case *ast.UnaryExpr:
		if lit, isLit := x.X.(*ast.CompositeLit); isLit && x.Op == token.AND {
			t = lit.Type
		}
	case *ast.CallExpr:
		if id, isID := x.Fun.(*ast.Ident); isID && id.Name == "new" && len(x.Args) == 1 {
			t = x.Args[0]
		}
	}
	if t == nil {
		return "", "", false
	}
	switch tt := t.(type) {
	case *ast.SelectorExpr:
		return "*" + f.src(tt), tt.Sel.Name, true
	case *ast.Ident:
		return "*" + tt.Name, tt.Name, true
	}
	return "", "", false
}
