package queue

import (
	"testing"
	"unsafe"
)

// The node layout is part of the queue's speed, for big backlogs are bound by
// cache misses: keep it within 64 bytes, one cache line, for a
// reconcile.Request-sized key.
func TestNodeSize(t *testing.T) {
	type request struct{ Namespace, Name string }
	if got := unsafe.Sizeof(node[request]{}); got > 64 {
		t.Errorf("node size = %d bytes, want at most 64", got)
	}
}
