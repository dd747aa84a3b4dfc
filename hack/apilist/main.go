// Command apilist writes the listing of opkit's exported API, api/opkit.txt,
// in the spirit of the Go project's api/*.txt: one line per exported name,
// sorted, so that a change to the API is a change to the listing and shows
// in review. docs/versioning.md says what the listing promises.
//
// Usage:
//
//	go run ./hack/apilist [-o api/opkit.txt] [packages]   # write the listing (make api)
//	go run ./hack/apilist -check api/opkit.txt [packages] # fail if it is out of date (make verify-api)
//	go run ./hack/apilist -count [packages]                # count the exported names per package
//
// The packages default to ./pkg/...; packages with an internal element in
// their path and test files are never listed. Types come from the
// compiler's export data (go list -export), so a listing costs no more than
// a build with a warm cache.
//
// Lines look like these:
//
//	pkg example.com/m/p, const Max int = 3
//	pkg example.com/m/p, const Timeout time.Duration = 30000000000 // 30s
//	pkg example.com/m/p, func For[T Object](*Cache, Options) (*Lister[T], error)
//	pkg example.com/m/p, method (*Lister[T]) Get(string, string) (T, error)
//	pkg example.com/m/p, type Options struct
//	pkg example.com/m/p, type Options struct, Timeout time.Duration
//	pkg example.com/m/p, type Options struct, embedded Base
//	pkg example.com/m/p, type Reader interface
//	pkg example.com/m/p, type Reader interface, Get(string) (*Object, error)
//	pkg example.com/m/p, type Sealed interface, unexported methods
//	pkg example.com/m/p, type Number interface{ ~int | ~float64 }
//	pkg example.com/m/p, var ErrClosed error
//
// A struct lists its exported fields (not promoted ones); an interface its
// exported methods, those of embedded interfaces included; every named type
// but an interface the exported methods of T, then those only *T has,
// promoted ones included. Parameter names are left out: renaming one is not
// an API change. Type parameters keep their names and carry their
// constraints. A type from the package itself is unqualified, one from the
// standard library or the same module is qualified by its package name, any
// other by its import path (two modules' packages named client must not read
// alike).
//
// -count counts exported top-level funcs, types, vars and consts, and the
// exported methods declared on exported types; not fields, interface
// methods or promoted methods.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apilist:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("apilist", flag.ContinueOnError)
	out := fs.String("o", "", "write the listing to this file instead of standard output")
	check := fs.String("check", "", "compare the listing with this file and fail, naming the changed lines, if they differ")
	count := fs.Bool("count", false, "print the number of exported names per package and in total, largest first")
	dir := fs.String("C", ".", "run in this directory (the root of the module to list)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./pkg/..."}
	}
	pkgs, err := load(*dir, patterns)
	if err != nil {
		return err
	}
	switch {
	case *count:
		return writeCounts(stdout, countNames(pkgs))
	case *check != "":
		return checkFile(*check, listing(pkgs))
	case *out != "":
		return os.WriteFile(*out, []byte(join(listing(pkgs))), 0o644)
	default:
		_, err := io.WriteString(stdout, join(listing(pkgs)))
		return err
	}
}
