package budget

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Close ends the requests waiting, refuses later ones, stops the timer
// and unregisters the metrics: a budget closed holds nothing.
func TestCloseReleasesEverything(t *testing.T) {
	reg := prometheus.NewRegistry()
	b, err := New(Options{QPS: 0.001, Burst: 1, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(t.Context(), LaneReconcile, "a"); err != nil {
		t.Fatalf("the burst's request: %v", err)
	}
	done := make(chan error, 2)
	for _, lane := range []Lane{LaneReconcile, LaneInformer} {
		go func() { done <- b.Wait(context.Background(), lane, "a") }()
	}
	for b.waiting() < 2 {
		runtime.Gosched() // until both wait; no timing assumed
	}
	b.Close()
	for range 2 {
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("a request waiting when the budget closed: Wait = %v, want ErrClosed", err)
		}
	}
	if err := b.Wait(t.Context(), LaneWebhook, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("a request after Close: Wait = %v, want ErrClosed", err)
	}
	if err := b.Prepay("a").Acquire(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("a worker's token after Close: Acquire = %v, want ErrClosed", err)
	}
	b.mu.Lock()
	timer, waiting := b.timer, b.s.waiting()
	b.mu.Unlock()
	if timer != nil || waiting != 0 {
		t.Errorf("after Close: timer armed %t, %d waiting; want none", timer != nil, waiting)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "opkit_api_budget_") {
			t.Errorf("after Close, %s is still registered", mf.GetName())
		}
	}
	b.Close() // twice is harmless
}

// A budget whose Options.Weights names another's weights shares its
// reconcile lane by them, as they are when a flow starts to wait.
func TestWeightsFromAnotherBudget(t *testing.T) {
	hub, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	hub.SetWeight("heavy", 3)
	m, err := New(Options{QPS: 10, Burst: 1, Weights: hub.Weight})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	shares := func() map[string]int {
		m.mu.Lock()
		defer m.mu.Unlock()
		drain(m.s, now)
		enqueue(m.s, LaneReconcile, "light", 500)
		enqueue(m.s, LaneReconcile, "heavy", 500)
		got, end := grantAll(m.s, now, 400)
		for _, f := range m.s.flows { // idle again
			for f.live > 0 {
				f.pop()
				m.s.lanes[LaneReconcile].live--
			}
		}
		now = end
		return countLanes(got)
	}
	for c, want := range map[string]int{"reconcile/heavy": 300, "reconcile/light": 100} {
		if n := shares(); math.Abs(float64(n[c]-want)) > 2 {
			t.Errorf("%s got %d of 400 tokens, want %d±2 (all: %v)", c, n[c], want, n)
		}
	}
	hub.SetWeight("heavy", 1)
	if n := shares(); math.Abs(float64(n["reconcile/heavy"]-200)) > 2 {
		t.Errorf("after the hub's weight changed to 1, heavy got %d of 400 tokens, want 200±2 (all: %v)", n["reconcile/heavy"], n)
	}
	if w := hub.Weight("unknown"); w != 1 {
		t.Errorf("Weight of a controller never weighed = %v, want 1", w)
	}
}
