package queue

import (
	"testing"
	"unsafe"
)

// The node layout is part of the queue's speed: keep it at two cache lines
// for a reconcile.Request-sized key.
func TestNodeSize(t *testing.T) {
	type request struct{ Namespace, Name string }
	if got := unsafe.Sizeof(node[request]{}); got != 128 {
		t.Errorf("node size = %d bytes, want 128", got)
	}
}
