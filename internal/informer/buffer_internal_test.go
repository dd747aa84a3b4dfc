package informer

import (
	"testing"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// done is a DoneChecker that is done.
type done struct{ ch chan struct{} }

func (d done) Name() string           { return "done" }
func (d done) Done() <-chan struct{}  { return d.ch }
func newDone() toolscache.DoneChecker { ch := make(chan struct{}); close(ch); return done{ch} }

// A drained buffer lets a backlog's room go: the room an initial list of
// ten thousand objects took would otherwise stay for the informer's life.
func TestDrainedBufferLetsItsRoomGo(t *testing.T) {
	got := make(chan struct{}, 10_000)
	b := newBuffer(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { got <- struct{}{} }}, nil, newDone())
	for range 10_000 {
		b.OnAdd(struct{}{}, true)
	}
	go b.run()
	defer b.stop()
	for range 10_000 {
		<-got
	}
	deadline := time.Now().Add(30 * time.Second)
	for !b.hasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("the buffer did not sync")
		}
		time.Sleep(time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := cap(b.queue); c > minBuffer {
		t.Errorf("a drained buffer keeps room for %d events, want at most %d", c, minBuffer)
	}
}
