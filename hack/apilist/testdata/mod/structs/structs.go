package structs

import "io"

type Base struct{ ID string }

func (Base) Hello() string { return "" }
func (*Base) Reset()       {}

type inner struct{ Promoted int }

func (inner) InnerMethod() {}

type Options struct {
	Base
	inner
	io.Reader
	Name    string `json:"name"`
	private int
	Nested  struct{ X, y int }
}

func (o *Options) Validate() error { return nil }
func (o Options) String() string   { return "" }
func (o Options) hidden()          {}

type Func func(int) bool

func (f Func) Call(i int) bool { return f(i) }

type hiddenType struct{}

func (hiddenType) Exported() {}
