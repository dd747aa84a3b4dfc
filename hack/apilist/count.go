package main

import (
	"cmp"
	"fmt"
	"go/types"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// count is the number of exported names one package declares.
type count struct {
	path                                string
	funcs, methods, types, vars, consts int
}

func (c count) total() int { return c.funcs + c.methods + c.types + c.vars + c.consts }

// countNames counts, per package, the exported top-level funcs, types, vars
// and consts, and the exported methods declared on exported types (promoted
// methods and an interface's methods are not counted; see
// docs/versioning.md), largest first.
func countNames(pkgs []pkg) []count {
	var counts []count
	for _, p := range pkgs {
		c := count{path: p.types.Path()}
		if p.module != "" {
			c.path = strings.TrimPrefix(strings.TrimPrefix(c.path, p.module), "/")
		}
		scope := p.types.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() {
				c.add(obj)
			}
		}
		counts = append(counts, c)
	}
	slices.SortStableFunc(counts, func(a, b count) int { return cmp.Compare(b.total(), a.total()) })
	return counts
}

func (c *count) add(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Func:
		c.funcs++
	case *types.Var:
		c.vars++
	case *types.Const:
		c.consts++
	case *types.TypeName:
		c.types++
		if named, ok := obj.Type().(*types.Named); ok && !obj.IsAlias() {
			for m := range named.Methods() {
				if m.Exported() {
					c.methods++
				}
			}
		}
	}
}

func writeCounts(w io.Writer, counts []count) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "names\tfuncs\tmethods\ttypes\tvars\tconsts\t\tpackage")
	var sum count
	for _, c := range counts {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\t%s\n", c.total(), c.funcs, c.methods, c.types, c.vars, c.consts, c.path)
		sum.funcs, sum.methods, sum.types = sum.funcs+c.funcs, sum.methods+c.methods, sum.types+c.types
		sum.vars, sum.consts = sum.vars+c.vars, sum.consts+c.consts
	}
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\t%s\n", sum.total(), sum.funcs, sum.methods, sum.types, sum.vars, sum.consts, "total")
	return tw.Flush()
}
