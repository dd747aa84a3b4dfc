package reconcile_test

import (
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/reconcile"
)

func TestSoonest(t *testing.T) {
	var (
		done    = reconcile.Done()
		backoff = reconcile.RequeueWithBackoff()
		second  = reconcile.RequeueAfter(time.Second)
		minute  = reconcile.RequeueAfter(time.Minute)
	)
	tests := []struct {
		name string
		in   []reconcile.Result
		want reconcile.Result
	}{
		{name: "none is done", want: done},
		{name: "one is itself", in: []reconcile.Result{minute}, want: minute},
		{name: "all done is done", in: []reconcile.Result{done, reconcile.Result{}, done}, want: done},
		{name: "a requeue beats done", in: []reconcile.Result{done, minute, done}, want: minute},
		{name: "the shorter delay wins", in: []reconcile.Result{minute, second}, want: second},
		{name: "the shorter delay wins in either order", in: []reconcile.Result{second, minute}, want: second},
		{name: "backoff beats any delay", in: []reconcile.Result{second, backoff, minute}, want: backoff},
		{name: "backoff beats done", in: []reconcile.Result{done, backoff}, want: backoff},
		{name: "a zero delay is done", in: []reconcile.Result{reconcile.RequeueAfter(0), minute}, want: minute},
		{name: "the winner keeps its priority", in: []reconcile.Result{minute, second.WithPriority(3)}, want: second.WithPriority(3)},
		{name: "a loser's priority is dropped", in: []reconcile.Result{minute.WithPriority(9), second}, want: second},
		{name: "done's priority is dropped", in: []reconcile.Result{done.WithPriority(9), minute}, want: minute},
		{name: "done with a priority is done", in: []reconcile.Result{done.WithPriority(9)}, want: done},
		{name: "a tie goes to the highest priority", in: []reconcile.Result{second.WithPriority(1), second.WithPriority(5), second}, want: second.WithPriority(5)},
		{name: "a tie goes to a priority over none", in: []reconcile.Result{backoff, backoff.WithPriority(-2)}, want: backoff.WithPriority(-2)},
		{name: "a tie without priorities goes to the first", in: []reconcile.Result{second, reconcile.RequeueAfter(time.Second)}, want: second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reconcile.Soonest(tt.in...)
			if got != tt.want {
				t.Errorf("Soonest(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
