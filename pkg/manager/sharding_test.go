package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

const (
	shardSlots = 16
	shardCtrl  = "conv"
)

// shardLog records every reconcile of every manager sharing a cluster, in
// real order (one mutex): who ran it, when it started and ended, and each
// change it applied. active catches overlap at the moment it happens.
type shardLog struct {
	mu       sync.Mutex
	runs     []shardRun
	active   map[reconcile.Request]string // the manager reconciling a key now
	overlaps []string
	missed   []string            // keys admitted whose existing object was not cached
	applied  map[string][]string // "<name>@<want>": the managers that applied it
}

type shardRun struct {
	who        string
	key        reconcile.Request
	start, end time.Time
}

func newShardLog() *shardLog {
	return &shardLog{active: map[reconcile.Request]string{}, applied: map[string][]string{}}
}

func (l *shardLog) begin(who string, key reconcile.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.active[key]; ok {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s started %v while %s was reconciling it", who, key, other))
	}
	l.active[key] = who
	l.runs = append(l.runs, shardRun{who: who, key: key, start: time.Now()})
	return len(l.runs) - 1
}

func (l *shardLog) end(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[i].end = time.Now()
	delete(l.active, l.runs[i].key)
}

func (l *shardLog) uncached(who string, key reconcile.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.missed = append(l.missed, fmt.Sprintf("%s reconciled %v, which exists, and its cache does not hold it", who, key))
}

func (l *shardLog) apply(who, name, want string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applied[name+"@"+want] = append(l.applied[name+"@"+want], who)
}

// converger is one manager's reconciler: it marks a ConfigMap's data
// "want" as applied in the annotation "done", with the resourceVersion it
// read as a precondition (as fenced writes should), and records it.
type converger struct {
	who    string
	log    *shardLog
	m      *manager.Manager
	lister *cache.Lister[*corev1.ConfigMap]
}

func (c *converger) Reconcile(ctx context.Context, key reconcile.Request) (reconcile.Result, error) {
	defer c.log.end(c.log.begin(c.who, key))
	cm, err := c.lister.Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		// A key is admitted only once the cache holds its slot: the
		// object must then be cached if it exists.
		if _, err := env.Client().CoreV1().ConfigMaps(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{}); err == nil {
			c.log.uncached(c.who, key)
		}
		return reconcile.Done(), nil
	} else if err != nil {
		return reconcile.Done(), err
	}
	want := cm.Data["want"]
	if cm.Annotations["done"] == want {
		return reconcile.Done(), nil
	}
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["done"] = want
	if err := c.m.UncachedClient().Update(ctx, cm); err != nil {
		return reconcile.Done(), fmt.Errorf("mark %s done at %s: %w", key.Name, want, err)
	}
	c.log.apply(c.who, key.Name, want)
	return reconcile.Done(), nil
}

// shardedManager is one replica of the test's sharded operator.
type shardedManager struct {
	who string
	m   *manager.Manager
	s   *started
}

func startSharded(t *testing.T, ns, who string, log *shardLog) *shardedManager {
	t.Helper()
	return startShardedWith(t, ns, who, log, shardSlots, cache.ServerFilterDetect)
}

// startShardedWith starts a replica sharing slots slots, whose cache's
// sharded types are filtered as filter says.
func startShardedWith(t *testing.T, ns, who string, log *shardLog, slots int, filter cache.ServerFilter) *shardedManager {
	t.Helper()
	m := newManager(t, ns, manager.Options{
		Sharding: manager.ShardingOptions{
			Enabled: true, Group: "conv", Namespace: ns, Identity: who, Slots: slots,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		},
		Cache: cache.Options{Namespaces: []string{ns}, Sharding: cache.ShardingOptions{ServerFilter: filter}},
	})
	c := &converger{who: who, log: log, m: m}
	if _, err := manager.NewController(m, shardCtrl, c, manager.For(&c.lister)); err != nil {
		t.Fatal(err)
	}
	return &shardedManager{who: who, m: m, s: start(t, m)}
}

// settled waits until the live managers all see each other, hold every
// slot between them, and are ready.
func settled(t *testing.T, live ...*shardedManager) {
	t.Helper()
	settledOver(t, shardSlots, live...)
}

func settledOver(t *testing.T, shardSlots int, live ...*shardedManager) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d members to share %d slots", len(live), shardSlots), func() bool {
		held := 0
		for _, sm := range live {
			reg := sm.m.Registry()
			if gauge(t, reg, imetrics.ShardingMembers) != float64(len(live)) {
				return false
			}
			held += int(gauge(t, reg, imetrics.ShardingSlotsHeld))
			if code, _ := get(t, "http://"+sm.m.HealthProbeAddr()+"/readyz"); code != http.StatusOK {
				return false
			}
		}
		return held == shardSlots
	})
}

// converge sets data "want" of every ConfigMap to want (creating them the
// first time), waits until every one is marked done at want, and checks
// that each change was applied by exactly one manager.
func converge(t *testing.T, ns string, log *shardLog, n int, want string) {
	t.Helper()
	cms := env.Client().CoreV1().ConfigMaps(ns)
	for i := range n {
		name := fmt.Sprintf("obj-%03d", i)
		cm, err := cms.Get(t.Context(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"want": want}}
			_, err = cms.Create(t.Context(), cm, metav1.CreateOptions{})
		case err == nil:
			cm.Data = map[string]string{"want": want}
			_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, fmt.Sprintf("%d ConfigMaps to converge at %s", n, want), func() bool {
		list, err := cms.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, cm := range list.Items {
			if cm.Data["want"] == want && cm.Annotations["done"] == want {
				done++
			}
		}
		// The API server shows a change applied a moment before the
		// reconcile that applied it records it: wait for the records too.
		return done == n && log.recorded(n, want)
	})
	log.mu.Lock()
	defer log.mu.Unlock()
	for i := range n {
		change := fmt.Sprintf("obj-%03d@%s", i, want)
		if got := log.applied[change]; len(got) != 1 {
			t.Errorf("change %s applied by %v, want exactly one manager", change, got)
		}
	}
}

// recorded reports whether every change obj-000..n-1 at want has been
// recorded as applied.
func (l *shardLog) recorded(n int, want string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		if len(l.applied[fmt.Sprintf("obj-%03d@%s", i, want)]) == 0 {
			return false
		}
	}
	return true
}

func (l *shardLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.overlaps {
		t.Error("overlapping reconciles:", o)
	}
	for _, m := range l.missed {
		t.Error("a key admitted before its slot was cached:", m)
	}
	// The same from the recorded times: per key, each reconcile ends
	// before the next one starts.
	last := map[reconcile.Request]shardRun{}
	for _, r := range l.runs {
		if p, ok := last[r.key]; ok && p.who != r.who && (p.end.IsZero() || r.start.Before(p.end)) {
			t.Errorf("%v: %s reconciled it from %v while %s did until %v", r.key, r.who, r.start, p.who, p.end)
		}
		last[r.key] = r
	}
}

// Three sharded managers share 200 objects: each change is applied by
// exactly one of them, and no key is ever reconciled by two at once; when
// one leaves gracefully the others take its keys, and when a fourth joins
// slots move to it, without overlap.
func TestShardedManagers(t *testing.T) {
	ns := env.Namespace(t)
	log := newShardLog()
	const n = 200
	var ms []*shardedManager
	for _, who := range []string{"m0", "m1", "m2"} {
		ms = append(ms, startSharded(t, ns, who, log))
	}
	settled(t, ms...)
	converge(t, ns, log, n, "1")
	// Each caches only its slots' objects, so it never sees most keys.
	split(t, n, n-1, ms...)
	log.check(t)

	// m0 leaves gracefully: its slots go to m1 and m2.
	if err := ms[0].s.stop(t); err != nil {
		t.Fatalf("stop m0: %v", err)
	}
	settled(t, ms[1], ms[2])
	converge(t, ns, log, n, "2")
	log.check(t)

	// m3 joins: slots move to it.
	m3 := startSharded(t, ns, "m3", log)
	settled(t, ms[1], ms[2], m3)
	if held := gauge(t, m3.m.Registry(), imetrics.ShardingSlotsHeld); held < shardSlots/3 {
		t.Errorf("m3 holds %v slots after joining, want at least %d", held, shardSlots/3)
	}
	// m3 took every slot it holds from m1 or m2, which claimed it.
	if n := counter(t, m3.m.Registry(), imetrics.ShardingHandovers); n == 0 {
		t.Errorf("%s = 0 on m3 after it took slots over", imetrics.ShardingHandovers)
	}
	if s := gauge(t, m3.m.Registry(), imetrics.ShardingLastTakeover); s <= 0 {
		t.Errorf("%s = %v on m3 after it took slots over, want a duration", imetrics.ShardingLastTakeover, s)
	}
	converge(t, ns, log, n, "3")
	log.check(t)
	log.mu.Lock()
	defer log.mu.Unlock()
	applied := map[string]int{}
	for change, who := range log.applied {
		if len(change) > 2 && change[len(change)-2:] == "@3" {
			applied[who[0]]++
		}
	}
	if applied["m3"] == 0 || applied["m0"] != 0 {
		t.Errorf("changes at 3 applied per manager %v: want some by m3 and none by m0, which left", applied)
	}
}
