package main

import (
	"fmt"
	"go/constant"
	"go/types"
	"slices"
	"strings"
	"time"
)

// listing returns the lines of pkgs' exported API, sorted.
func listing(pkgs []pkg) []string {
	var lines []string
	for _, p := range pkgs {
		l := lister{pkg: p, prefix: "pkg " + p.types.Path() + ", "}
		scope := p.types.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() {
				l.object(obj)
			}
		}
		lines = append(lines, l.lines...)
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// lister collects the lines of one package.
type lister struct {
	pkg    pkg
	prefix string
	lines  []string
}

// emit adds a line built by f.
func (l *lister) emit(f func(p *printer)) {
	p := &printer{pkg: l.pkg}
	p.WriteString(l.prefix)
	f(p)
	l.lines = append(l.lines, p.String())
}

func (l *lister) object(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Const:
		l.emit(func(p *printer) {
			p.WriteString("const " + obj.Name() + " ")
			p.typ(obj.Type())
			p.WriteString(" = " + constValue(obj))
		})
	case *types.Var:
		l.emit(func(p *printer) {
			p.WriteString("var " + obj.Name() + " ")
			p.typ(obj.Type())
		})
	case *types.Func:
		sig := obj.Signature()
		l.emit(func(p *printer) {
			p.WriteString("func " + obj.Name())
			p.typeParams(sig.TypeParams(), true)
			p.signature(sig)
		})
	case *types.TypeName:
		l.typeName(obj)
	}
}

// constValue is a constant's value, a string in full; a duration's is
// followed by its reading, = 30000000000 // 30s.
func constValue(c *types.Const) string {
	v := c.Val()
	if v.Kind() == constant.String {
		return v.ExactString()
	}
	if n, ok := c.Type().(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Duration" {
		if d, exact := constant.Int64Val(v); exact {
			return fmt.Sprintf("%s // %s", v, time.Duration(d))
		}
	}
	return v.String()
}

// typeName lists a type: a line for the type, one per exported field of a
// struct or method of an interface, and one per exported method in the
// method sets of T and *T, promoted ones included.
func (l *lister) typeName(obj *types.TypeName) {
	if alias, ok := obj.Type().(*types.Alias); ok {
		l.emit(func(p *printer) {
			p.WriteString("type " + obj.Name())
			p.typeParams(alias.TypeParams(), true)
			p.WriteString(" = ")
			p.typ(alias.Rhs())
		})
		return
	}
	named := obj.Type().(*types.Named)
	decl := func(p *printer) {
		p.WriteString("type " + obj.Name())
		p.typeParams(named.TypeParams(), true)
	}
	switch under := named.Underlying().(type) {
	case *types.Struct:
		l.structType(decl, under)
	case *types.Interface:
		l.interfaceType(decl, under)
		return // its methods are listed as the interface's
	default:
		l.emit(func(p *printer) {
			decl(p)
			p.WriteString(" ")
			p.typ(under)
		})
	}
	l.methods(named)
}

func (l *lister) structType(decl func(*printer), t *types.Struct) {
	l.emit(func(p *printer) {
		decl(p)
		p.WriteString(" struct")
	})
	for i := range t.NumFields() {
		f := t.Field(i)
		if !f.Exported() {
			continue
		}
		l.emit(func(p *printer) {
			decl(p)
			p.WriteString(" struct, ")
			if f.Embedded() {
				p.WriteString("embedded ")
			} else {
				p.WriteString(f.Name() + " ")
			}
			p.typ(f.Type())
		})
	}
}

// interfaceType lists an interface: a line for the type (one that spells
// out a constraint's type terms), a line saying it has unexported methods
// if it has (no other package can implement it), and one per exported
// method, promoted ones included.
func (l *lister) interfaceType(decl func(*printer), t *types.Interface) {
	l.emit(func(p *printer) {
		decl(p)
		if t.IsMethodSet() {
			p.WriteString(" interface")
			return
		}
		p.WriteString(" ")
		p.typ(t)
	})
	for m := range t.Methods() {
		l.emit(func(p *printer) {
			decl(p)
			if !m.Exported() {
				p.WriteString(" interface, unexported methods")
				return
			}
			p.WriteString(" interface, " + m.Name())
			p.signature(m.Signature())
		})
	}
}

// methods lists the exported methods of T, then those only *T has.
func (l *lister) methods(named *types.Named) {
	recv := func(p *printer, ptr bool) {
		p.WriteString("method (")
		if ptr {
			p.WriteString("*")
		}
		p.WriteString(named.Obj().Name())
		p.typeParams(named.TypeParams(), false)
		p.WriteString(") ")
	}
	value := types.NewMethodSet(named)
	for _, ptr := range []bool{false, true} {
		set := value
		if ptr {
			set = types.NewMethodSet(types.NewPointer(named))
		}
		for sel := range set.Methods() {
			m := sel.Obj()
			if !m.Exported() || ptr && value.Lookup(m.Pkg(), m.Name()) != nil {
				continue
			}
			l.emit(func(p *printer) {
				recv(p, ptr)
				p.WriteString(m.Name())
				p.signature(sel.Type().(*types.Signature))
			})
		}
	}
}

// join returns lines as a file's text.
func join(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
