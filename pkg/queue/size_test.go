package queue

import (
	"testing"
	"unsafe"
)

// The node layout is part of the queue's speed: keep it within two cache
// lines for a reconcile.Request-sized key.
func TestNodeSize(t *testing.T) {
	type request struct{ Namespace, Name string }
	if got := unsafe.Sizeof(node[request]{}); got > 128 {
		t.Errorf("node size = %d bytes, want at most 128", got)
	}
}
