package queue

import "testing"

// Free nodes come back first in, first out, and none is lost or handed out
// twice when a burst spills past maxFree into the overflow and back.
func TestFreeNodesFirstInFirstOut(t *testing.T) {
	var f freeNodes[int]
	const n = 3*maxFree + 17
	taken := make([]*node[int], n)
	seen := map[*node[int]]bool{}
	for i := range taken {
		taken[i] = f.pop()
		if seen[taken[i]] {
			t.Fatalf("pop %d: node handed out twice", i)
		}
		seen[taken[i]] = true
	}
	for _, nd := range taken {
		f.push(nd)
	}
	if f.n > maxFree {
		t.Fatalf("%d nodes kept free, want at most %d", f.n, maxFree)
	}
	// The nodes kept are the last ones freed, in the order they were freed.
	for i := n - f.n; i < n; i++ {
		if got := f.pop(); got != taken[i] {
			t.Fatalf("pop after free: got a node other than the %dth freed", i)
		}
	}
	// The rest come back from the overflow (unless a garbage collection
	// emptied it), or are new, each at most once.
	again := map[*node[int]]bool{}
	for range n {
		nd := f.pop()
		if again[nd] {
			t.Fatal("a node came back from the overflow twice")
		}
		again[nd] = true
	}
}
