package cache_test

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// TestPathsTaken runs three sharded replicas' caches, each holding a third
// of the slots, against whatever API server the package was started on,
// and checks that each holds exactly its slots' objects whichever path the
// cache took: the API server's shard selectors where it has the
// ShardedListAndWatch gate on (1.36+ with the gate), filtering in the cache
// where not; a streaming list (WatchList) where the server serves one, a
// LIST where not; protobuf for a built-in type. It logs the paths and the
// heap each replica's cache costs beside one unsharded cache, on a line
// make test-matrix reads ("matrix-paths:").
func TestPathsTaken(t *testing.T) {
	p := checkPaths(t, env, 3000)
	t.Logf("matrix-paths: server=%s sharding=%s lists=%s encoding=%s heap-per-replica=%.1fMiB heap-unsharded=%.1fMiB objects=%d",
		env.ServerVersion(), p.filtering, p.lists, p.encoding, mib(p.perReplica), mib(p.unsharded), p.objects)
}

// On an API server with streaming lists off (its WatchList gate, which
// every version pinned knows) and without shard selectors (the
// ShardedListAndWatch gate left off, its default, where it is known), the
// replicas sync by LIST, filter in the cache, and still hold exactly their
// slots' objects: with TestPathsTaken, 1.36 and later run both filtering
// paths.
func TestPathsTakenWithoutStreamingLists(t *testing.T) {
	e, err := testenv.Start(testenv.Options{FeatureGates: map[string]bool{"WatchList": false}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	p := checkPaths(t, e, 600)
	t.Logf("matrix-fallback: server=%s gates=WatchList-off,ShardedListAndWatch-off sharding=%s lists=%s encoding=%s", e.ServerVersion(), p.filtering, p.lists, p.encoding)
}

// paths is what checkPaths saw.
type paths struct {
	filtering, lists, encoding string
	perReplica, unsharded      uint64 // heap bytes
	objects                    int
}

// checkPaths creates n ConfigMaps in e, starts three sharded replicas'
// caches over them and one unsharded cache, fails t unless each replica
// holds exactly its slots' objects by the path e's gates call for, and
// returns the paths and heap.
func checkPaths(t *testing.T, e *testenv.Environment, n int) paths {
	t.Helper()
	ns := e.Namespace(t)
	objs := createShardConfigMapsIn(t, e, ns, n)
	rec := &pathRecorder{}
	newCache := func(opts cache.Options) *cache.Cache {
		cfg := e.Config()
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return rec.wrap(rt) })
		opts.Mutations.OnMutation = testenv.ReportMutations(t)
		opts.UnregisteredReads.OnRead = testenv.ReportUnregisteredReads(t)
		c, err := cache.New(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sets := [][]int{slotRange(0, 340), slotRange(341, 682), slotRange(683, 1023)}
	heapBefore := liveHeap()
	replicas := make([]*cache.Cache, len(sets))
	listers := make([]*cache.Lister[*corev1.ConfigMap], len(sets))
	for i, set := range sets {
		s, _ := sharding.NewSlots(partitionSlots)
		c := newCache(cache.Options{Sharding: cache.ShardingOptions{Slots: s, ServerFilter: cache.ServerFilterDetect}})
		l, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetSlots(t.Context(), set); err != nil {
			t.Fatal(err)
		}
		start(t, c)
		replicas[i], listers[i] = c, l
	}
	p := paths{perReplica: (liveHeap() - heapBefore) / uint64(len(sets)), objects: n}
	for i, set := range sets {
		want := bySlot(partitionSlots, objs, sharding.ByUID, set)
		got, err := listers[i].List(ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(objNames(got), want) {
			t.Errorf("replica %d (slots %d..%d) holds %d objects, want exactly its slots' %d", i, set[0], set[len(set)-1], len(got), len(want))
		}
	}
	heapBefore = liveHeap()
	whole := newCache(cache.Options{Namespaces: []string{ns}})
	if _, err := cache.Register[*corev1.ConfigMap](whole, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, whole)
	p.unsharded = liveHeap() - heapBefore
	runtime.KeepAlive(replicas)

	p.filtering, p.lists, p.encoding = rec.paths()
	wantFiltering := "cache"
	if on, _ := e.FeatureGate("ShardedListAndWatch"); on {
		wantFiltering = "server"
	}
	if p.filtering != wantFiltering {
		t.Errorf("shard filtering in the %s, want in the %s (kube-apiserver %s, ShardedListAndWatch %s)", p.filtering, wantFiltering, e.ServerVersion(), gateState(e, "ShardedListAndWatch"))
	}
	wantLists := "list"
	if on, _ := e.FeatureGate("WatchList"); on {
		wantLists = "watchlist"
	}
	if p.lists != wantLists {
		t.Errorf("initial lists by %s, want %s (kube-apiserver %s, WatchList %s)", p.lists, wantLists, e.ServerVersion(), gateState(e, "WatchList"))
	}
	if p.encoding != "protobuf" {
		t.Errorf("a built-in type's lists and watches in %s, want protobuf", p.encoding)
	}
	return p
}

func gateState(e *testenv.Environment, name string) string {
	switch on, known := e.FeatureGate(name); {
	case !known:
		return "unknown"
	case on:
		return "on"
	default:
		return "off"
	}
}

// pathRecorder records the ConfigMap lists and watches the caches send.
type pathRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (p *pathRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/configmaps") && req.Method == http.MethodGet {
			p.mu.Lock()
			p.reqs = append(p.reqs, req)
			p.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// paths says, of the requests but sharding.Supported's probe, where
// shards were filtered ("server" if any carried a shard selector, else
// "cache"), how the initial lists were made ("watchlist": streaming lists
// only; "list": a LIST), and the encoding asked for.
func (p *pathRecorder) paths() (filtering, lists, encoding string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	filtering, lists, encoding = "cache", "watchlist", "protobuf"
	for _, r := range p.reqs {
		q := r.URL.Query()
		if strings.Contains(q.Get("shardSelector"), "'0x0'") {
			continue // sharding.Supported's probe
		}
		if q.Get("shardSelector") != "" {
			filtering = "server"
		}
		if q.Get("watch") != "true" {
			lists = "list"
		}
		if !strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
			encoding = fmt.Sprintf("json (%s)", r.Header.Get("Accept"))
		}
	}
	return filtering, lists, encoding
}
