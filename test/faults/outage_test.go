package faults

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// outageLength is how long the outage tests keep the control plane down:
// three lease durations, enough for every renewal to fail and the lease
// to expire; OPKIT_FAULTS_OUTAGE (such as "60s") sets another.
func outageLength(t *testing.T) time.Duration {
	d := 3 * leaseDuration
	if v := os.Getenv("OPKIT_FAULTS_OUTAGE"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("OPKIT_FAULTS_OUTAGE=%q: %v", v, err)
		}
	}
	return d
}

// Two replicas with leader election ride out an outage longer than the
// lease, under load: kube-apiserver stopped, or etcd frozen (SIGSTOP)
// under a running kube-apiserver. Neither process exits; once the control
// plane is back one of them leads, the copies converge, and the two never
// act at the same time. The test logs the time from the return to the
// first reconcile and to convergence, and the relists.
func TestOutage(t *testing.T) {
	for _, tt := range []struct {
		name     string
		down, up func() error
	}{
		{"kube-apiserver stopped", env.StopAPIServer, env.StartAPIServer},
		{"etcd frozen", env.SuspendEtcd, env.ResumeEtcd},
	} {
		t.Run(tt.name, func(t *testing.T) { outage(t, tt.down, tt.up) })
	}
}

func outage(t *testing.T, down, up func() error) {
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
			manager: manager.Options{
				Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"},
				LeaderElection: manager.LeaderElectionOptions{
					Enabled: true, Name: "mirror-faults", Namespace: w.home, Identity: id,
					LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
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
	ops := []*operator{a, b}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}
	relists := func() (n float64) {
		for _, op := range ops {
			n += op.counter(t, imetrics.CacheRelists, nil)
		}
		return n
	}
	relistsBefore := relists()

	// Load until the outage: the sources change every 50ms.
	ctx, stopLoad := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ctx.Err() == nil; i++ {
			for j := range mirrors {
				_ = w.setData(w.home, fmt.Sprintf("src-%d", j), map[string]string{"v": fmt.Sprint(i)})
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	time.Sleep(time.Second)
	length := outageLength(t)
	if err := down(); err != nil {
		stopLoad()
		t.Fatal(err)
	}
	stopLoad()
	wg.Wait()
	time.Sleep(length)
	for _, op := range ops {
		if g := op.counter(t, imetrics.Leader, nil); g != 0 {
			t.Errorf("a replica's %s = %v after %v without the control plane, want 0", imetrics.Leader, g, length)
		}
	}
	if err := up(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for _, op := range ops {
		select {
		case err := <-op.done:
			op.done <- err // for stop
			t.Fatalf("a replica's Start returned during the outage: %v", err)
		default:
		}
	}

	want := map[string]string{"v": "final"}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		// The API server may answer 5xx for a moment after etcd resumes.
		eventually(t, 30*time.Second, "edit "+name, func() error { return w.setData(w.home, name, want) })
	}
	edited := time.Since(back)
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the outage", w.copiesEqual(nss, name, want))
	}
	converged := time.Since(back)
	first := func(act *activity) (time.Time, bool) {
		var at time.Time
		for _, s := range act.all() {
			if s.start.After(back) && (at.IsZero() || s.start.Before(at)) {
				at = s.start
			}
		}
		return at, !at.IsZero()
	}
	leader := ""
	eventually(t, 30*time.Second, "one replica to lead", func() error {
		ga, gb := a.counter(t, imetrics.Leader, nil), b.counter(t, imetrics.Leader, nil)
		switch {
		case ga+gb != 1:
			return fmt.Errorf("%s: a %v, b %v", imetrics.Leader, ga, gb)
		case ga == 1:
			leader = "a"
		default:
			leader = "b"
		}
		return nil
	})
	firstAct := "none"
	for _, act := range []*activity{actA, actB} {
		if at, ok := first(act); ok {
			firstAct = at.Sub(back).Round(time.Millisecond).String()
			break
		}
	}
	t.Logf("outage of %v (lease %v): after the return the sources were edited %v later, the first reconcile or write came %s later, and the copies converged %v later; %s leads; relists across both replicas %v -> %v",
		length, leaseDuration, edited.Round(time.Millisecond), firstAct, converged.Round(time.Millisecond), leader, relistsBefore, relists())
	if o := overlaps(actA, actB); len(o) > 0 {
		t.Errorf("the replicas acted at the same time %d times, such as %s", len(o), o[0])
	}
	for _, op := range ops {
		select {
		case err := <-op.done:
			op.done <- err
			t.Errorf("a replica's Start returned after the outage: %v", err)
		default:
		}
	}
}
