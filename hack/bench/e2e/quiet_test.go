package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

// The quiet schedule is open-loop: against the real API server, with the
// test as a slow operator that copies each version two ticks after it was
// issued and skips every other one, every tenant's change of a tick
// reaches the API server at that tick, before any copy of the tick
// before; every change is measured to its own version, or to the newer
// one that overtook it; none is lost. The clock is fake, so the
// latencies are exact.
func TestQuietOpenLoop(t *testing.T) {
	const tenants, per, ticks, lag = 2, 2, 5, 2 // lag in ticks
	const every = time.Second
	fake := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	n := newNoisy(env.Client(), nil, "openloop", noisyOptions{quiet: tenants, quietNamespaces: per, quietEvery: every}, time.Minute, "")
	n.clock = fake
	ctx := t.Context()
	if err := n.follow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.createQuiet(ctx); err != nil {
		t.Fatal(err)
	}
	for tn := range tenants {
		playOperator(t, n, tn, 1)
	}
	stop := make(chan struct{})
	type result struct {
		quietLoad
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := n.quietOpenLoop(ctx, 0, stop)
		done <- result{l, err}
	}()
	for i := range ticks + lag {
		if i < ticks {
			for tn := range tenants {
				awaitSource(t, n.cs, n.quietHome(tn), i+2)
			}
		}
		if i == ticks-1 {
			close(stop) // the flood ends before the next tick
		}
		if j := i - lag; j >= 0 && (j%2 == 0 || j == ticks-1) {
			for tn := range tenants {
				playOperator(t, n, tn, j+2)
			}
		}
		fake.Step(every)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.issued != ticks*tenants {
		t.Errorf("%d changes issued, want %d ticks × %d tenants", r.issued, ticks, tenants)
	}
	var want []quietChanged
	for tn := range tenants {
		for j := range ticks {
			l := lag * every // copied lag ticks after it was issued
			if j%2 == 1 && j != ticks-1 {
				l += every // overtaken by the next tick's version, copied a tick later
			}
			want = append(want, quietChanged{tenant: tn, version: j + 2, seconds: l.Seconds()})
		}
	}
	got := slices.SortedFunc(slices.Values(r.changes), func(a, b quietChanged) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.version, b.version))
	})
	if diff := gocmp.Diff(want, got, gocmp.AllowUnexported(quietChanged{})); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// playOperator writes quiet tenant tn's copies at version v, as the
// Mirror would, and returns once the tracker saw them.
func playOperator(t *testing.T, n *noisy, tn, v int) {
	t.Helper()
	home := n.quietHome(tn)
	for k := range n.o.quietNamespaces {
		c := quietCopy(home, n.quietTarget(tn, k), "v"+strconv.Itoa(v))
		var err error
		if v == 1 {
			_, err = n.cs.CoreV1().ConfigMaps(c.Namespace).Create(t.Context(), c, metav1.CreateOptions{})
		} else {
			_, err = n.cs.CoreV1().ConfigMaps(c.Namespace).Update(t.Context(), c, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("copy version %d of %s: %v", v, home, err)
		}
	}
	if _, err := n.track.wait(t.Context(), home, v, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// awaitSource returns once the source in home holds version v or a newer
// one at the API server.
func awaitSource(t *testing.T, cs kubernetes.Interface, home string, v int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", home, fields.OneTermEqualSelector("metadata.name", "settings"))
	if _, err := watchtools.UntilWithSync(ctx, lw, &corev1.ConfigMap{}, nil, func(e watch.Event) (bool, error) {
		cm, ok := e.Object.(*corev1.ConfigMap)
		if !ok {
			return false, nil
		}
		have, _ := strconv.Atoi(strings.TrimPrefix(cm.Data["version"], "v"))
		return have >= v, nil
	}); err != nil {
		t.Fatalf("source of %s at version %d: %v", home, v, fmt.Errorf("watch source: %w", err))
	}
}
