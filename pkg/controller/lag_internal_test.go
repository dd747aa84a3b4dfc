package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// A change dated after the reconcile starts (the API server's clock ahead
// of ours, or a managedFields time a client wrote) is observed as no lag,
// not as a negative one.
func TestFutureChangeIsNoReconcileLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	l, err := newEventLag(reg, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	l.reconcileStarts(now.Add(time.Hour), now)
	l.reconcileStarts(now.Add(-2*time.Second), now)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != imetrics.ControllerEventLag {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != 2 {
			t.Errorf("%s: %d observations summing to %v s; want 2 summing to 2 s (0 for the future change, 2 for the other)",
				imetrics.ControllerEventLag, h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Fatalf("no %s in the registry", imetrics.ControllerEventLag)
}
