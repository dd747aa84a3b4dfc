package funcs

import "context"

func Run(ctx context.Context, name string, args ...int) error        { return nil }
func Pair() (a, b int)                                               { return 0, 0 }
func Handler(f func(context.Context, string) (bool, error))          {}
func Chans(in <-chan int, out chan<- string, both chan (<-chan int)) {}
func Anonymous(s struct{ A, b int }, i interface{ M() }, p *[4]byte) {}
func unexported()                                                    {}
