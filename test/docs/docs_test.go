// Package docs_test checks that the prose documentation tells the truth
// about the code: every opkit identifier and every metric name that the
// README, docs/ and the packages' doc.go files name exists, and every
// quoted Go block is in its compiled file. prose_test.go holds the facts
// that prose states once: the Layout table and the root doc.go's package
// list, time estimates (in make help only), the porting guide's "Not in
// opkit yet", links and their anchors, pkg/ paths, the README's length,
// versions and controller; figures_test.go the README's headline figures,
// each against the docs/performance.md table its bullet links to;
// notyet_test.go every "not yet" with the check that keeps it true;
// commands_test.go the commands the docs run (make targets, opkit
// subcommands and flags, paths).
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module root, two levels above this package.
const root = "../.."

// packages are opkit's public packages, by directory under pkg/; the docs
// name each by its last element (webhook/requester is requester).
var packages = []string{"cache", "conditions", "controller", "finalizer", "manager", "metrics", "owner", "queue", "reconcile", "source", "status", "testenv", "webhook/requester"}

// names are the packages' names, as the docs qualify identifiers.
var names = func() []string {
	out := make([]string, len(packages))
	for i, p := range packages {
		out[i] = path.Base(p)
	}
	return out
}()

// api is what one package declares: its exported top-level names, and per
// named type its fields (with the type each has, as package and name) and
// methods.
type api struct {
	names   map[string]bool
	members map[string]map[string]typeRef // type -> field or method -> its type, if a named opkit type
}

type typeRef struct{ pkg, name string }

func loadAPI(t *testing.T, pkgDir string) *api {
	t.Helper()
	a := &api{names: map[string]bool{}, members: map[string]map[string]typeRef{}}
	fset := token.NewFileSet()
	pkg := path.Base(pkgDir)
	dir := filepath.Join(root, "pkg", pkgDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		a.add(pkg, f)
	}
	return a
}

func (a *api) member(typ string) map[string]typeRef {
	if a.members[typ] == nil {
		a.members[typ] = map[string]typeRef{}
	}
	return a.members[typ]
}

func (a *api) add(pkg string, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				a.names[d.Name.Name] = true
				continue
			}
			a.member(receiverName(d.Recv.List[0].Type))[d.Name.Name] = typeRef{}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					a.names[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							ref := refOf(pkg, fld.Type)
							for _, n := range fld.Names {
								a.member(s.Name.Name)[n.Name] = ref
							}
							if len(fld.Names) == 0 { // embedded
								a.member(s.Name.Name)[ref.name] = ref
							}
						}
					}
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								a.member(s.Name.Name)[n.Name] = typeRef{}
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						a.names[n.Name] = true
					}
				}
			}
		}
	}
}

// receiverName returns T of a receiver *T, T[K] or *T[K].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// refOf returns the opkit type a field has, if it is one.
func refOf(pkg string, e ast.Expr) typeRef {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return typeRef{pkg, x.Name}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && slices.Contains(names, id.Name) {
				return typeRef{id.Name, x.Sel.Name}
			}
			return typeRef{}
		default:
			return typeRef{}
		}
	}
}

// docFiles are the prose files checked, relative to the root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "doc.go"}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mds {
		files = append(files, strings.TrimPrefix(m, root+"/"))
	}
	for _, p := range packages {
		files = append(files, filepath.Join("pkg", p, "doc.go"))
	}
	return files
}

var qualified = regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\.([A-Z]\w*)((?:\.[A-Z]\w*)*)`)

// Every pkg.Name and pkg.Type.Member in the docs, and in the comments of
// opkit's code, exists.
func TestDocsNameWhatExists(t *testing.T) {
	apis := loadAPIs(t)
	texts := map[string]string{}
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		texts[file] = string(text)
	}
	for file, text := range commentsOf(t) {
		texts[file] += text
	}
	for file, text := range texts {
		for _, m := range qualified.FindAllStringSubmatch(text, -1) {
			if err := resolve(apis, m[1], m[2], m[3]); err != "" {
				t.Errorf("%s names %s, but %s", file, m[0], err)
			}
		}
	}
	// Markdown names types unqualified too: Type.Member, where exactly one
	// opkit package has the type.
	for _, file := range docFiles(t) {
		if !strings.HasSuffix(file, ".md") {
			continue
		}
		for _, m := range member.FindAllStringSubmatch(texts[file], -1) {
			var owners []string
			for _, p := range names {
				if _, ok := apis[p].members[m[2]]; ok && apis[p].names[m[2]] {
					owners = append(owners, p)
				}
			}
			if len(owners) == 1 {
				if _, ok := apis[owners[0]].members[m[2]][m[3]]; !ok {
					t.Errorf("%s names %s.%s, but %s.%s has no field or method %s", file, m[2], m[3], owners[0], m[2], m[3])
				}
			}
		}
	}
}

var (
	// member is Type.Member, unqualified, as a package's own comments
	// name its types.
	member = regexp.MustCompile(`(^|[^.\w])([A-Z]\w*)\.([A-Z]\w*)`)
	// constructor is a name that can only be a Go declaration: New..., Err...
	constructor = regexp.MustCompile(`(^|[^.\w])((?:New|Err)[A-Z]\w*)`)
)

// Within a package's comments, Type.Member names a member of the package's
// type, and New... and Err... name declarations of the package (or of
// another opkit package).
func TestCommentsNameWhatExists(t *testing.T) {
	apis := loadAPIs(t)
	for file, text := range commentsOf(t) {
		parts := strings.Split(file, "/")
		if parts[0] != "pkg" || len(parts) < 3 {
			continue
		}
		dir := strings.Join(parts[1:len(parts)-1], "/")
		if !slices.Contains(packages, dir) {
			continue
		}
		pkg := path.Base(dir)
		a := apis[pkg]
		for _, m := range member.FindAllStringSubmatch(text, -1) {
			members, isType := a.members[m[2]]
			if isType && a.names[m[2]] {
				if _, ok := members[m[3]]; !ok {
					t.Errorf("%s names %s.%s, but %s.%s has no field or method %s", file, m[2], m[3], pkg, m[2], m[3])
				}
			}
		}
		for _, m := range constructor.FindAllStringSubmatch(text, -1) {
			if !declared(apis, m[2]) {
				t.Errorf("%s names %s, which no opkit package declares", file, m[2])
			}
		}
	}
}

// declared reports whether name is a top-level declaration, a method or
// a field of an opkit package.
func declared(apis map[string]*api, name string) bool {
	for _, a := range apis {
		if a.names[name] {
			return true
		}
		for _, members := range a.members {
			if _, ok := members[name]; ok {
				return true
			}
		}
	}
	return false
}

// The check above finds what does not exist, and only that.
func TestResolve(t *testing.T) {
	apis := loadAPIs(t)
	for _, tt := range []struct {
		ref  string
		want bool
	}{
		{"cache.Options.Registerer", true},
		{"manager.Options.Cache.Scheme", true},
		{"queue.Queue.Get", true},
		{"cache.NewMetrics", false},
		{"cache.Options.Nope", false},
		{"manager.Options.Cache.Nope", false},
		{"requester.Checker.Check", true},
		{"requester.Options.TTL", true},
		{"requester.Checker.Nope", false},
	} {
		m := qualified.FindStringSubmatch(tt.ref)
		if got := resolve(apis, m[1], m[2], m[3]) == ""; got != tt.want {
			t.Errorf("%s exists = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

func loadAPIs(t *testing.T) map[string]*api {
	apis := map[string]*api{}
	for _, p := range packages {
		apis[path.Base(p)] = loadAPI(t, p)
	}
	return apis
}

// commentsOf returns the comments of the non-test Go files under pkg/ and
// cmd/, by file.
func commentsOf(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, c := range f.Comments {
				b.WriteString(c.Text())
			}
			out[strings.TrimPrefix(path, root+"/")] = b.String()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func resolve(apis map[string]*api, pkg, name, rest string) string {
	a := apis[pkg]
	if !a.names[name] {
		return pkg + " declares no " + name
	}
	cur := typeRef{pkg, name}
	for _, sel := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		if sel == "" {
			break
		}
		if cur.name == "" {
			return "the type before " + sel + " is not an opkit type"
		}
		members := apis[cur.pkg].members[cur.name]
		next, ok := members[sel]
		if !ok {
			return cur.pkg + "." + cur.name + " has no field or method " + sel
		}
		cur = next
	}
	return ""
}

var (
	metricName = regexp.MustCompile(`\b(?:opkit|workqueue|controller_runtime|rest_client)_[a-z_]*[a-z]`)
	histogram  = regexp.MustCompile(`_(bucket|count|sum)$`)
)

// Every metric the docs name is one that opkit's code names: a string
// constant, or the Namespace, Subsystem and Name of a prometheus *Opts
// literal.
func TestDocsNameMetricsThatExist(t *testing.T) {
	known := definedMetrics(t)
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range metricName.FindAllString(string(text), -1) {
			if !known[name] && !known[histogram.ReplaceAllString(name, "")] {
				t.Errorf("%s names the metric %s, which no opkit code defines", file, name)
			}
		}
	}
}

// definedMetrics returns every string literal and string constant of the
// non-test code under pkg/, internal/ and cmd/, and the full name of every
// literal with Namespace, Subsystem and Name fields.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	var files []*ast.File
	for _, dir := range []string{"pkg", "internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			files = append(files, f)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	consts := map[string]string{} // by name, in any package: names are unique enough here
	known := map[string]bool{}
	str := func(e ast.Expr) (string, bool) {
		switch x := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(x.Value)
			return s, err == nil && x.Kind == token.STRING
		case *ast.Ident:
			s, ok := consts[x.Name]
			return s, ok
		case *ast.SelectorExpr:
			s, ok := consts[x.Sel.Name]
			return s, ok
		}
		return "", false
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := str(vs.Values[i]); ok {
							consts[name.Name] = s
						}
					}
				}
			}
			if s, ok := n.(ast.Expr); ok {
				if v, ok := str(s); ok {
					known[v] = true
				}
			}
			return true
		})
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			parts := map[string]string{}
			for _, el := range lit.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok {
						if v, ok := str(kv.Value); ok {
							parts[k.Name] = v
						}
					}
				}
			}
			if parts["Name"] != "" {
				var full []string
				for _, k := range []string{"Namespace", "Subsystem", "Name"} {
					if parts[k] != "" {
						full = append(full, parts[k])
					}
				}
				known[strings.Join(full, "_")] = true
			}
			return true
		})
	}
	return known
}

// fromMarker precedes a fenced Go block that quotes a compiled file.
var fromMarker = regexp.MustCompile("<!-- from: (\\S+) -->\\n```go\\n((?s:.*?))```")

// A Go block marked as quoted from a file says what the file says: every
// line of it is a line of the file.
func TestQuotedCodeMatchesItsSource(t *testing.T) {
	quotes := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fromMarker.FindAllStringSubmatch(string(text), -1) {
			quotes++
			src, err := os.ReadFile(filepath.Join(root, m[1]))
			if err != nil {
				t.Errorf("%s quotes %s: %v", file, m[1], err)
				continue
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(string(src), "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, l := range strings.Split(m[2], "\n") {
				if l = strings.TrimSpace(l); l != "" && !lines[l] {
					t.Errorf("%s quotes %s, which has no line %q", file, m[1], l)
				}
			}
		}
	}
	if quotes == 0 {
		t.Error("no quoted Go block found: the marker or its pattern changed")
	}
}
