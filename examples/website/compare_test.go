package website

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// controllerSize is what the comparison counts in a controller's file.
type controllerSize struct {
	lines, imports int
	// mentions counts, per Kubernetes kind, the times the file names its
	// Go type.
	mentions map[string]int
}

// measure counts the lines, imports and kind mentions of file. kinds maps
// a Go type, as package path and name, to its kind.
func measure(t *testing.T, file string, kinds map[[2]string]string) controllerSize {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	size := controllerSize{lines: strings.Count(string(src), "\n"), imports: len(f.Imports), mentions: map[string]int{}}
	imported := map[string]string{} // name in the file -> path
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if spec.Name != nil {
			name = spec.Name.Name
		}
		imported[name] = p
	}
	local := reflect.TypeFor[WebsiteReconciler]().PkgPath()
	for _, decl := range f.Decls {
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok {
					return true // a method of a call's result, say: look inside
				}
				if kind, ok := kinds[[2]string{imported[x.Name], n.Sel.Name}]; ok {
					size.mentions[kind]++
				}
				return false // pkg.Name, or a field of a variable
			case *ast.Ident:
				if kind, ok := kinds[[2]string{local, n.Name}]; ok {
					size.mentions[kind]++
				}
			}
			return true
		})
	}
	return size
}

// website.go, the controller on opkit, is no longer than the same
// controller on controller-runtime v0.25 (website_controllerruntime_test.go),
// imports no more packages, and names each Kubernetes type at most twice.
func TestControllerNoLargerThanControllerRuntime(t *testing.T) {
	kinds := map[[2]string]string{}
	for gvk, typ := range newScheme(t).AllKnownTypes() {
		kinds[[2]string{typ.PkgPath(), typ.Name()}] = gvk.Kind
	}
	opkit := measure(t, "website.go", kinds)
	cr := measure(t, "website_controllerruntime_test.go", kinds)
	t.Logf("opkit:              %d lines, %d imports, kinds named %v", opkit.lines, opkit.imports, opkit.mentions)
	t.Logf("controller-runtime: %d lines, %d imports, kinds named %v", cr.lines, cr.imports, cr.mentions)
	if opkit.lines > cr.lines {
		t.Errorf("website.go has %d lines, controller-runtime's %d: opkit's must be no longer", opkit.lines, cr.lines)
	}
	if opkit.imports > cr.imports {
		t.Errorf("website.go imports %d packages, controller-runtime's %d: opkit's must import no more", opkit.imports, cr.imports)
	}
	for _, kind := range slices.Sorted(maps.Keys(opkit.mentions)) {
		if n := opkit.mentions[kind]; n > 2 {
			t.Errorf("website.go names %s %d times, want at most 2", kind, n)
		}
	}
	if len(opkit.mentions) == 0 || len(cr.mentions) == 0 {
		t.Errorf("no kind found in a file: opkit %v, controller-runtime %v", opkit.mentions, cr.mentions)
	}
}
