package cache_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// listRecorder records the ConfigMap lists (not watches, nor their
// later pages) that pass through it, as "selector@match", and can refuse
// the lists at an exact resource version.
type listRecorder struct {
	mu         sync.Mutex
	lists      []string
	next       http.RoundTripper
	refuseAtRV bool
}

func (l *listRecorder) client(t *testing.T) *http.Client {
	return wrappedClient(t, func(next http.RoundTripper) http.RoundTripper { l.next = next; return l })
}

func (l *listRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	sel := q.Get("shardSelector")
	if sel != "" && !strings.Contains(sel, "'0x0'") && strings.HasSuffix(req.URL.Path, "/configmaps") && q.Get("watch") != "true" && q.Get("continue") == "" {
		l.mu.Lock()
		l.lists = append(l.lists, sel+"@"+q.Get("resourceVersionMatch"))
		refuse := l.refuseAtRV && q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact)
		l.mu.Unlock()
		if refuse {
			return nil, apierrors.NewResourceExpired("refused by the test: too old resource version")
		}
	}
	return l.next.RoundTrip(req)
}

// take returns the lists recorded since the last take.
func (l *listRecorder) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lists
	l.lists = nil
	return out
}

// TestSetSlotsListsOnlyTheGainedSlots: where the API server filters by
// shard selector, a slot move lists from it only the gained slots'
// objects, at the resource version of the objects kept, and the cache
// holds exactly its new slots' objects, hands adds of the gained ones and
// deletes of the lost ones only, and misses no change made while slots
// move; an API server that refuses that list costs a full list, not an
// object.
func TestSetSlotsListsOnlyTheGainedSlots(t *testing.T) {
	if on, _ := env.FeatureGate("ShardedListAndWatch"); !on {
		t.Skip("the API server does not filter by shard selector: every move lists every object")
	}
	cache.SetSeedPageSize(t, 4) // several pages, at the first one's version
	s, _ := sharding.NewSlots(shardSlots)
	sel := func(slots []int) string { v, _ := s.Selector(sharding.ByUID, slots); return v }
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprint("refused=", refuse), func(t *testing.T) {
			ns := env.Namespace(t)
			objs := createShardConfigMaps(t, ns, 160)
			rec := &listRecorder{refuseAtRV: refuse}
			sc := newShardedCacheWith(t, ns, cache.Options{HTTPClient: rec.client(t)}, cache.ServerFilterDetect, shardSlots, slotRange(0, 7))
			rec.take()
			sc.ev.reset()

			// Quiet: gain 8 and 9, lose 0.
			sc.slots = slotRange(1, 9)
			if err := sc.c.SetSlots(t.Context(), sc.slots); err != nil {
				t.Fatal(err)
			}
			want := []string{sel([]int{8, 9}) + "@Exact"}
			if refuse {
				want = append(want, sel(sc.slots)+"@") // the full list after the refusal
			}
			if got := rec.take(); !slices.Equal(got, want) {
				t.Errorf("moving to slots 1..9 listed %q, want %q", got, want)
			}
			sc.holdsExactly(t, ns, bySlot(shardSlots, objs, sharding.ByUID, sc.slots))
			gainedNames := bySlot(shardSlots, objs, sharding.ByUID, []int{8, 9})
			if got := sc.ev.names(func(e *events) map[string]int { return e.added }); !slices.Equal(got, gainedNames) {
				t.Errorf("gaining slots 8 and 9 handed %d adds, want the %d objects of those slots", len(got), len(gainedNames))
			}
			if got, want := sc.ev.names(func(e *events) map[string]int { return e.delete }), bySlot(shardSlots, objs, sharding.ByUID, []int{0}); !slices.Equal(got, want) {
				t.Errorf("losing slot 0 handed %d deletes, want the %d objects of that slot", len(got), len(want))
			}

			// Busy: moves while every slot's objects change, are made and
			// are deleted.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { churn(t, ns, stop) })
			for _, slots := range [][]int{slotRange(3, 12), slotRange(2, 12), slotRange(2, 15)} {
				time.Sleep(50 * time.Millisecond)
				sc.slots = slots
				if err := sc.c.SetSlots(t.Context(), slots); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			holdsTheServersState(t, sc, ns)
		})
	}
}

// churn updates, creates and deletes ConfigMaps of ns until stop closes.
func churn(t *testing.T, ns string, stop <-chan struct{}) {
	cms := env.Client().CoreV1().ConfigMaps(ns)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("cm-%05d", rand.IntN(160))
		var err error
		switch i % 4 {
		case 0, 1:
			var cm *corev1.ConfigMap
			if cm, err = cms.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
				cm.Data = map[string]string{"i": fmt.Sprint(i)}
				_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
			}
		case 2:
			_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("new-%05d", i), Namespace: ns}}, metav1.CreateOptions{})
		case 3:
			err = cms.Delete(t.Context(), name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && t.Context().Err() == nil {
			t.Errorf("churn: %v", err)
			return
		}
	}
}

// holdsTheServersState waits until sc's Lister holds exactly the API
// server's objects of ns in sc's slots, each at the server's resource
// version, and fails t if it does not within a minute.
func holdsTheServersState(t *testing.T, sc *shardedCache, ns string) {
	t.Helper()
	s, _ := sharding.NewSlots(sc.count)
	var want, got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := env.Client().CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = nil
		for i := range list.Items {
			if slices.Contains(sc.slots, s.SlotOf(sharding.ByUID, &list.Items[i])) {
				want = append(want, list.Items[i].Name+"@"+list.Items[i].ResourceVersion)
			}
		}
		held, err := sc.lister.List(ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, cm := range held {
			got = append(got, cm.Name+"@"+cm.ResourceVersion)
		}
		slices.Sort(want)
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Errorf("after the moves the cache holds %d objects, the API server %d of its slots; first differences: %q", len(got), len(want), firstDiff(got, want))
}

// firstDiff returns up to five entries of a or b that the other lacks.
func firstDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "cache has "+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "server has "+x)
		}
	}
	return out[:min(5, len(out))]
}
