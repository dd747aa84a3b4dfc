package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// Lease timings of the failover tests: short, yet long enough that a
// leader on a busy two-core machine running -race keeps renewing.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// Two replicas, each running mirror.Setup with leader election. The leader
// is canceled under load: the standby takes over within the bound, the
// two never act at the same time, and the copies end right.
func TestLeaderFailover(t *testing.T) {
	for _, tt := range []struct {
		name    string
		release bool
		// bound on the time from the leader's cancel to the standby's
		// election. client-go's candidates try every RetryPeriod
		// stretched by up to 1.2x jitter (so up to 2.2x RetryPeriod
		// apart), and a standby counts LeaseDuration from when it saw
		// the last renewal, one try late at worst: LeaseDuration + 4.4x
		// RetryPeriod at worst without release, 2.2x RetryPeriod with it;
		// LeaseDuration + RetryPeriod and RetryPeriod on average. A
		// second covers the leader's drain and a loaded machine.
		bound time.Duration
	}{
		{"without release", false, leaseDuration + 22*retryPeriod/5 + time.Second},
		{"with release", true, 11*retryPeriod/5 + time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) { failover(t, tt.release, tt.bound) })
	}
}

func failover(t *testing.T, release bool, bound time.Duration) {
	w := newWorld(t)
	nss := w.namespaces(5)
	const mirrors = 4
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
	}
	replica := func(id string, act *activity) *operator {
		return startOperator(t, opOptions{
			config: act.recordWrites(env.Config()),
			logger: act.logger(),
			manager: manager.Options{LeaderElection: manager.LeaderElectionOptions{
				Enabled: true, Name: "mirror-faults", Namespace: w.home, Identity: id,
				LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
				ReleaseOnCancel: release,
			}},
		})
	}
	actA, actB := &activity{}, &activity{}
	a := replica("a", actA)
	select {
	case <-a.mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("replica a not elected within 30s")
	}
	b := replica("b", actB)
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}

	// Load: the sources change every 50ms until the standby has taken
	// over, so that reconciles are in flight when the leader goes.
	ctx, stopLoad := context.WithTimeout(t.Context(), 30*time.Second)
	defer stopLoad()
	var wg sync.WaitGroup
	var last int
	wg.Go(func() {
		for i := 1; i <= 600 && ctx.Err() == nil; i++ {
			for j := range mirrors {
				if err := w.setData(w.home, fmt.Sprintf("src-%d", j), map[string]string{"v": fmt.Sprint(i)}); err != nil {
					t.Errorf("edit a source: %v", err)
					return
				}
			}
			last = i
			time.Sleep(50 * time.Millisecond)
		}
	})
	time.Sleep(time.Second)
	canceled := time.Now()
	if err := a.stop(); err != nil {
		t.Errorf("leader stopped with %v", err)
	}
	stopped := time.Now()
	select {
	case <-b.mgr.Elected():
	case <-time.After(2 * bound):
		t.Fatalf("the standby was not elected within %v of the leader's cancel", 2*bound)
	}
	took := time.Since(canceled)
	time.Sleep(500 * time.Millisecond) // the new leader works under load too
	stopLoad()
	wg.Wait()
	want := map[string]string{"v": fmt.Sprint(last)}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the failover", w.copiesEqual(nss, name, want))
	}

	t.Logf("release=%v: the leader stopped %v after its cancel; the standby was elected %v after the cancel (bound %v; LeaseDuration %v, RetryPeriod %v)",
		release, stopped.Sub(canceled).Round(time.Millisecond), took.Round(time.Millisecond), bound, leaseDuration, retryPeriod)
	if took > bound {
		t.Errorf("takeover took %v, more than %v", took, bound)
	}
	if o := overlaps(actA, actB); len(o) > 0 {
		t.Errorf("the replicas acted at the same time %d times, such as %s", len(o), o[0])
	}
	_, lastA, okA := actA.bounds()
	firstB, _, okB := actB.bounds()
	if !okA || !okB {
		t.Fatalf("no activity recorded: leader %v, standby %v", okA, okB)
	}
	t.Logf("leader: %d reconciles and writes, the last ending %v after the cancel; standby: %d, the first starting %v after the cancel",
		len(actA.all()), lastA.Sub(canceled).Round(time.Millisecond), len(actB.all()), firstB.Sub(canceled).Round(time.Millisecond))
	if !firstB.After(lastA) {
		t.Errorf("the standby acted at %v, before the leader's last act at %v", firstB, lastA)
	}
}
