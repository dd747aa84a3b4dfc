package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadTestdata lists testdata/mod, a module of one small package per
// feature of the listing; example.org/ext, which it requires, stands for
// another module.
func loadTestdata(t *testing.T, dir string) []pkg {
	t.Helper()
	t.Setenv("GOWORK", "off")
	pkgs, err := load(dir, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestListing(t *testing.T) {
	byPkg := map[string][]string{}
	for _, l := range listing(loadTestdata(t, "testdata/mod")) {
		path, decl, _ := strings.Cut(strings.TrimPrefix(l, "pkg example.com/apitest/"), ", ")
		byPkg[path] = append(byPkg[path], decl)
	}
	tests := []struct {
		pkg  string
		want []string
	}{{
		pkg: "consts", // typed, untyped and duration constants with their values; vars with their types
		want: []string{
			"const Big untyped int = 1180591620717411303424",
			"const ModeA Mode = 0",
			"const ModeB Mode = 1",
			`const Name untyped string = "apitest"`,
			"const Pi untyped float = 3.14159",
			"const Timeout time.Duration = 90000000000 // 1m30s",
			"type Mode int",
			"var Default map[string][]Mode",
			"var ErrClosed error",
		},
	}, {
		pkg: "funcs", // no parameter names, at any depth
		want: []string{
			"func Anonymous(struct{ A int; b int }, interface{ M() }, *[4]byte)",
			"func Chans(<-chan int, chan<- string, chan (<-chan int))",
			"func Handler(func(context.Context, string) (bool, error))",
			"func Pair() (int, int)",
			"func Run(context.Context, string, ...int) error",
		},
	}, {
		pkg: "generics", // type parameters with their constraints; receivers with their names
		want: []string{
			"func Keys[M ~map[K]V, K comparable, V any](M) []K",
			"func Max[T cmp.Ordered](T, ...T) T",
			"func New[T any, PT interface{ *T; Set(string) }](string) T",
			"method (*List[T]) Push(T)",
			"method (List[T]) Len() int",
			"type List[T any] struct",
			"type List[T any] struct, Items []T",
			"type Map[K comparable, V cmp.Ordered] map[K]V",
			"type Pairs[T any] = []List[T]",
			"type Strings = List[string]",
		},
	}, {
		pkg: "ifaces", // methods of embedded interfaces; unexported methods; type terms
		want: []string{
			"type Empty interface",
			"type Number interface{ ~int | ~int64 | float64 }",
			"type Runner interface",
			"type Runner interface, Run(int) error",
			"type Runner interface, String() string",
			"type Sealed interface",
			"type Sealed interface, Open() bool",
			"type Sealed interface, unexported methods",
		},
	}, {
		pkg: "qualify", // the same module and the standard library by package name, another module by path
		want: []string{
			"func Use(consts.Mode, time.Duration, *example.org/ext.Config) hidden.Thing",
		},
	}, {
		pkg: "structs", // exported fields and embeddings; method sets of T and *T, promoted methods included
		want: []string{
			"method (*Base) Reset()",
			"method (*Options) Reset()",
			"method (*Options) Validate() error",
			"method (Base) Hello() string",
			"method (Func) Call(int) bool",
			"method (Options) Hello() string",
			"method (Options) InnerMethod()",
			"method (Options) Read([]byte) (int, error)",
			"method (Options) String() string",
			"type Base struct",
			"type Base struct, ID string",
			"type Func func(int) bool",
			"type Options struct",
			"type Options struct, Name string",
			"type Options struct, Nested struct{ X int; y int }",
			"type Options struct, embedded Base",
			"type Options struct, embedded io.Reader",
		},
	}, {
		pkg:  "withtests", // test files are not the API
		want: []string{"func Listed()"},
	}, {
		pkg: "internal/hidden", // nor are internal packages
	}}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, byPkg[tt.pkg]); diff != "" {
				t.Errorf("lines of %s (-want +got):\n%s", tt.pkg, diff)
			}
		})
	}
}

func TestCount(t *testing.T) {
	got := countNames(loadTestdata(t, "testdata/mod"))
	want := []count{
		{path: "consts", types: 1, vars: 2, consts: 6},
		{path: "generics", funcs: 3, methods: 2, types: 4},
		// Declared methods only: Options's promoted Hello, Reset, Read and
		// InnerMethod and hiddenType's Exported are not counted.
		{path: "structs", methods: 5, types: 3},
		{path: "funcs", funcs: 5},
		{path: "ifaces", types: 4},
		{path: "qualify", funcs: 1},
		{path: "withtests", funcs: 1},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(count{})); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name                 string
		have, want           []string
		wantAdded, wantRemov []string
	}{
		{name: "same", have: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "added", have: []string{"a"}, want: []string{"a", "c", "b"}, wantAdded: []string{"b", "c"}},
		{name: "removed", have: []string{"a", "b"}, want: []string{"b"}, wantRemov: []string{"a"}},
		{name: "changed", have: []string{"f() int"}, want: []string{"f() bool"}, wantAdded: []string{"f() bool"}, wantRemov: []string{"f() int"}},
		{name: "empty lines ignored", have: []string{"a", ""}, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			added, removed := diff(tt.have, tt.want)
			if diff := cmp.Diff(tt.wantAdded, added); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRemov, removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckFailsOnChangedAPI is make api, then a change to the API, then
// make verify-api.
func TestCheckFailsOnChangedAPI(t *testing.T) {
	t.Setenv("GOWORK", "off")
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(root, "mod")
	listing := filepath.Join(root, "api.txt")
	apilist := func(args ...string) error {
		return run(append([]string{"-C", mod}, append(args, "./funcs")...), new(strings.Builder))
	}
	if err := apilist("-o", listing); err != nil {
		t.Fatal(err)
	}
	if err := apilist("-check", listing); err != nil {
		t.Fatalf("check of a listing just written: %v", err)
	}
	src := filepath.Join(mod, "funcs", "funcs.go")
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer("(a, b int)", "(a, b int, c bool)", "return 0, 0", "return 0, 0, false").Replace(string(code))
	code = []byte(changed + "\nfunc Added() {}\n")
	if err := os.WriteFile(src, code, 0o644); err != nil {
		t.Fatal(err)
	}
	err = apilist("-check", listing)
	if err == nil {
		t.Fatal("check passed after the API changed")
	}
	for _, want := range []string{
		"- pkg example.com/apitest/funcs, func Pair() (int, int)\n",
		"+ pkg example.com/apitest/funcs, func Added()\n",
		"+ pkg example.com/apitest/funcs, func Pair() (int, int, bool)\n",
		"run make api and commit " + listing,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check's error lacks %q:\n%v", want, err)
		}
	}
}
