package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// opkitFlags returns the flags of each opkit subcommand ("create api"),
// read from cmd/opkit's flag definitions: every flag.NewFlagSet("opkit
// <sub>", ...) and the flags defined on it in the same function.
func opkitFlags(t *testing.T) map[string][]string {
	t.Helper()
	dir := filepath.Join(root, "cmd", "opkit")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			sub, fs, flags := "", "", []string{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
					if call, ok := as.Rhs[0].(*ast.CallExpr); ok && isSelector(call.Fun, "flag", "NewFlagSet") && len(call.Args) > 0 {
						if s, ok := stringLit(call.Args[0]); ok {
							sub = strings.TrimPrefix(s, "opkit ")
						}
						if id, ok := as.Lhs[0].(*ast.Ident); ok {
							fs = id.Name
						}
					}
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || fs == "" {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isSelector(sel, fs, sel.Sel.Name) {
					return true
				}
				// fs.String("name", ...); fs.StringVar(&v, "name", ...), fs.Var(v, "name", ...)
				i := 0
				if strings.HasSuffix(sel.Sel.Name, "Var") {
					i = 1
				}
				if i < len(call.Args) {
					if s, ok := stringLit(call.Args[i]); ok {
						flags = append(flags, s)
					}
				}
				return true
			})
			if sub != "" {
				out[sub] = append(out[sub], flags...)
			}
		}
	}
	if len(out["create api"]) == 0 {
		t.Fatal("found no flags of opkit create api in cmd/opkit: the pattern or the code changed")
	}
	return out
}

// isSelector reports whether e is x.sel.
func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x && s.Sel.Name == sel
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
