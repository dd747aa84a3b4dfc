package generics

import "cmp"

type List[T any] struct{ Items []T }

func (l *List[T]) Push(v T) {}
func (l List[T]) Len() int  { return 0 }

type Map[K comparable, V cmp.Ordered] map[K]V

func Max[T cmp.Ordered](a T, b ...T) T { return a }

func Keys[M ~map[K]V, K comparable, V any](m M) []K { return nil }

func New[T any, PT interface {
	*T
	Set(string)
}](s string) T {
	var t T
	return t
}

type Pairs[T any] = []List[T]

type Strings = List[string]
