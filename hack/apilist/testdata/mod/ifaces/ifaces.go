package ifaces

import "fmt"

type Runner interface {
	fmt.Stringer
	Run(int) error
}

type Sealed interface {
	Open() bool
	sealed()
}

type Number interface {
	~int | ~int64 | float64
}

type Empty interface{}
