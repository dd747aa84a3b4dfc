package source_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

func TestChannel(t *testing.T) {
	verifyNoLeaks(t)
	q := newQueue[reconcile.Request](t)
	ch := make(chan reconcile.Request)
	src := source.NewChannel(ch)
	if err := src.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	ch <- req("ns", "a")
	ch <- req("ns", "b")
	close(ch) // ends the source's goroutine; verifyNoLeaks checks it
	var got []item
	for range 2 {
		k, p, _ := q.Get()
		q.Done(k)
		got = append(got, item{k, p})
	}
	if diff := cmp.Diff([]item{normal("ns", "a"), normal("ns", "b")}, got); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

// MapChannel turns each event into keys; the source stops when its context
// ends although the channel stays open.
func TestMapChannel(t *testing.T) {
	verifyNoLeaks(t)
	q := newQueue[reconcile.Request](t)
	ch := make(chan int)
	src := source.MapChannel(ch, func(n int) []reconcile.Request {
		keys := make([]reconcile.Request, n)
		for i := range keys {
			keys[i] = req("ns", strconv.Itoa(i))
		}
		return keys
	})
	if got, want := src.String(), "source.Channel[int]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	ch <- 2
	ch <- 0 // received only after 2's keys were added
	if diff := cmp.Diff([]item{normal("ns", "0"), normal("ns", "1")}, drain(q)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

func TestChannelStartErrors(t *testing.T) {
	q := newQueue[reconcile.Request](t)
	if err := source.NewChannel[reconcile.Request](nil).Start(t.Context(), q); err == nil {
		t.Error("Start with a nil channel succeeded")
	}
	if err := source.MapChannel[int, reconcile.Request](make(chan int), nil).Start(t.Context(), q); err == nil {
		t.Error("Start with a nil map function succeeded")
	}
}
