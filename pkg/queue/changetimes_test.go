package queue

import (
	"math/rand/v2"
	"testing"
)

// changeTimes keeps what a Go map keeps, through sets, lowerings and takes
// of nodes allocated in chunks as the queue allocates them, growing from
// empty and emptying again.
func TestChangeTimesAsMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var nodes []*node[string]
	for range 4 {
		chunk := make([]node[string], 256)
		for i := range chunk {
			nodes = append(nodes, &chunk[i])
		}
	}
	var got changeTimes[string]
	want := map[*node[string]]int64{}
	for step := range 200_000 {
		n := nodes[r.IntN(len(nodes))]
		switch op := r.IntN(3); {
		case op == 0 || step < 2_000: // fill up first
			at := r.Int64N(1000) + 1
			got.set(n, at)
			want[n] = at
		case op == 1:
			g, ok := got.get(n)
			w, wok := want[n]
			if g != w || ok != wok {
				t.Fatalf("step %d: get = %d, %t; want %d, %t", step, g, ok, w, wok)
			}
		default:
			if g, w := got.take(n), want[n]; g != w {
				t.Fatalf("step %d: take = %d, want %d", step, g, w)
			}
			delete(want, n)
		}
		if got.used != len(want) {
			t.Fatalf("step %d: %d nodes held, want %d", step, got.used, len(want))
		}
	}
	for n, w := range want {
		if g := got.take(n); g != w {
			t.Fatalf("take = %d, want %d", g, w)
		}
	}
	if got.used != 0 || len(got.all()) != 0 {
		t.Errorf("%d nodes held after taking every one", got.used)
	}
}
