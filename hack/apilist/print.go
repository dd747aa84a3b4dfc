package main

import (
	"fmt"
	"go/types"
	"strings"
)

// printer writes types as Go source spells them, without parameter names,
// qualified as the listing's lines are (see the package doc).
type printer struct {
	strings.Builder
	pkg pkg
}

func (p *printer) qualify(other *types.Package) {
	switch {
	case other == nil || other == p.pkg.types:
	case p.pkg.std[other.Path()] || p.pkg.module != "" && within(other.Path(), p.pkg.module):
		p.WriteString(other.Name() + ".")
	default:
		p.WriteString(other.Path() + ".")
	}
}

func within(path, module string) bool {
	return path == module || strings.HasPrefix(path, module+"/")
}

func (p *printer) typ(t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			p.WriteString("unsafe.")
		}
		p.WriteString(t.Name())
	case *types.Pointer:
		p.WriteString("*")
		p.typ(t.Elem())
	case *types.Slice:
		p.WriteString("[]")
		p.typ(t.Elem())
	case *types.Array:
		fmt.Fprintf(p, "[%d]", t.Len())
		p.typ(t.Elem())
	case *types.Map:
		p.WriteString("map[")
		p.typ(t.Key())
		p.WriteString("]")
		p.typ(t.Elem())
	case *types.Chan:
		p.chanType(t)
	case *types.Signature:
		p.WriteString("func")
		p.signature(t)
	case *types.Struct:
		p.structType(t)
	case *types.Interface:
		p.interfaceType(t)
	case *types.Union:
		p.unionType(t)
	case *types.Named:
		p.qualify(t.Obj().Pkg())
		p.WriteString(t.Obj().Name())
		p.typeList(t.TypeArgs())
	case *types.Alias:
		p.qualify(t.Obj().Pkg())
		p.WriteString(t.Obj().Name())
		p.typeList(t.TypeArgs())
	case *types.TypeParam:
		p.WriteString(t.Obj().Name())
	default:
		panic(fmt.Sprintf("apilist: unexpected type %T %v", t, t))
	}
}

func (p *printer) chanType(t *types.Chan) {
	switch t.Dir() {
	case types.SendOnly:
		p.WriteString("chan<- ")
	case types.RecvOnly:
		p.WriteString("<-chan ")
	default:
		p.WriteString("chan ")
		if e, ok := t.Elem().(*types.Chan); ok && e.Dir() == types.RecvOnly {
			p.WriteString("(")
			p.typ(e)
			p.WriteString(")")
			return
		}
	}
	p.typ(t.Elem())
}

// signature writes a function's parameters and results, without their names.
func (p *printer) signature(sig *types.Signature) {
	p.WriteString("(")
	for i := range sig.Params().Len() {
		if i > 0 {
			p.WriteString(", ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			p.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		p.typ(t)
	}
	p.WriteString(")")
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		p.WriteString(" ")
		p.typ(res.At(0).Type())
	default:
		p.WriteString(" (")
		for i := range res.Len() {
			if i > 0 {
				p.WriteString(", ")
			}
			p.typ(res.At(i).Type())
		}
		p.WriteString(")")
	}
}

func (p *printer) structType(t *types.Struct) {
	p.WriteString("struct{")
	for i := range t.NumFields() {
		if i > 0 {
			p.WriteString(";")
		}
		p.WriteString(" ")
		if f := t.Field(i); !f.Embedded() {
			p.WriteString(f.Name() + " ")
		}
		p.typ(t.Field(i).Type())
	}
	if t.NumFields() > 0 {
		p.WriteString(" ")
	}
	p.WriteString("}")
}

// interfaceType writes an interface type literal: its embedded types, then its
// explicit methods, as they are declared.
func (p *printer) interfaceType(t *types.Interface) {
	if t.IsImplicit() { // [T ~int] is the constraint interface{ ~int }
		p.typ(t.EmbeddedType(0))
		return
	}
	p.WriteString("interface{")
	n := 0
	sep := func() {
		if n > 0 {
			p.WriteString(";")
		}
		p.WriteString(" ")
		n++
	}
	for i := range t.NumEmbeddeds() {
		sep()
		p.typ(t.EmbeddedType(i))
	}
	for i := range t.NumExplicitMethods() {
		sep()
		m := t.ExplicitMethod(i)
		p.WriteString(m.Name())
		p.signature(m.Signature())
	}
	if n > 0 {
		p.WriteString(" ")
	}
	p.WriteString("}")
}

func (p *printer) unionType(t *types.Union) {
	for i := range t.Len() {
		if i > 0 {
			p.WriteString(" | ")
		}
		if t.Term(i).Tilde() {
			p.WriteString("~")
		}
		p.typ(t.Term(i).Type())
	}
}

// typeList writes type arguments: [A, B].
func (p *printer) typeList(l *types.TypeList) {
	if l.Len() == 0 {
		return
	}
	p.WriteString("[")
	for i := range l.Len() {
		if i > 0 {
			p.WriteString(", ")
		}
		p.typ(l.At(i))
	}
	p.WriteString("]")
}

// typeParams writes type parameters with their constraints, [K comparable,
// V any]; or, for a receiver, their names alone, [K, V].
func (p *printer) typeParams(l *types.TypeParamList, constraints bool) {
	if l.Len() == 0 {
		return
	}
	p.WriteString("[")
	for i := range l.Len() {
		if i > 0 {
			p.WriteString(", ")
		}
		p.WriteString(l.At(i).Obj().Name())
		if constraints {
			p.WriteString(" ")
			p.typ(l.At(i).Constraint())
		}
	}
	p.WriteString("]")
}
