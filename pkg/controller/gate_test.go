package controller_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// verdicts is a Gate that answers per key name: Skip for "skip", Retry
// for "late" until it has been retried twice, Admit otherwise; it records
// each done call.
type verdicts struct {
	mu   sync.Mutex
	asks map[string][]int // the retries of each ask, by key name
	done map[string][]bool
}

func (g *verdicts) Admit(key reconcile.Request, retries int) (controller.Verdict, func(bool)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asks[key.Name] = append(g.asks[key.Name], retries)
	switch {
	case key.Name == "skip":
		return controller.Skip, nil
	case key.Name == "late" && retries < 2:
		return controller.Retry, nil
	}
	return controller.Admit, func(requeued bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.done[key.Name] = append(g.done[key.Name], requeued)
	}
}

// The gate is asked before every reconcile: a skipped key is never
// reconciled, a key to retry is retried with backoff until admitted, and
// done follows each admitted reconcile with whether the key was queued
// again.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &verdicts{asks: map[string][]int{}, done: map[string][]bool{}}
		r := &recording{do: func(_ context.Context, key reconcile.Request, _ int) (reconcile.Result, error) {
			return reconcile.Done(), nil
		}}
		c, err := controller.New("gated", r, controller.Options[reconcile.Request]{Gate: g, ReadYourWritesTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Watch(&keys{keys: []reconcile.Request{req("skip"), req("late"), req("now")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Start(ctx) }()
		// The retries' backoff (5ms, then 10ms) passes in the bubble's
		// fake time.
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.calls {
			got = append(got, c.key.Name)
		}
		if len(got) != 2 || !(got[0] == "now" || got[1] == "now") || !(got[0] == "late" || got[1] == "late") {
			t.Errorf("reconciled %v, want late and now once each and never skip", got)
		}
		want := map[string][]int{"skip": {0}, "late": {0, 1, 2}, "now": {0}}
		if diff := cmp.Diff(want, g.asks); diff != "" {
			t.Errorf("asks by key, retries (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string][]bool{"late": {false}, "now": {false}}, g.done); diff != "" {
			t.Errorf("done calls (-want +got):\n%s", diff)
		}
	})
}

// A key the gate sends back to be retried keeps the time of its change:
// the reconcile it gets in the end observes the lag from that change,
// retries included.
func TestGateRetryKeepsChangeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &verdicts{asks: map[string][]int{}, done: map[string][]bool{}}
		src := &keys{keys: []reconcile.Request{req("late"), req("now")}, changed: time.Now().Add(-time.Hour)}
		_, reg := run(t, time.Second, controller.Options[reconcile.Request]{Gate: g, ReadYourWritesTimeout: -1}, src,
			func(context.Context, reconcile.Request, int) (reconcile.Result, error) { return reconcile.Done(), nil })
		h := histogram(t, reg, imetrics.ControllerEventLag, map[string]string{"controller": "test"})
		if h.GetSampleCount() != 2 || h.GetSampleSum() < 2*time.Hour.Seconds() {
			t.Errorf("%d lags observed, summing %vs; want 2 (late and now), each at least an hour",
				h.GetSampleCount(), h.GetSampleSum())
		}
	})
}
