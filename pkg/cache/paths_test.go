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
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
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
	const n = 3000
	ns := env.Namespace(t)
	objs := createShardConfigMaps(t, ns, n)
	rec := &pathRecorder{}
	sets := [][]int{slotRange(0, 340), slotRange(341, 682), slotRange(683, 1023)}
	heapBefore := liveHeap()
	replicas := make([]*cache.Cache, len(sets))
	listers := make([]*cache.Lister[*corev1.ConfigMap], len(sets))
	for i, set := range sets {
		s, _ := sharding.NewSlots(partitionSlots)
		cfg := rest.CopyConfig(env.Config())
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return rec.wrap(rt) })
		c, err := cache.New(cfg, cache.Options{Sharding: cache.ShardingOptions{Slots: s, ServerFilter: cache.ServerFilterDetect}})
		if err != nil {
			t.Fatal(err)
		}
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
	perReplica := (liveHeap() - heapBefore) / uint64(len(sets))
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
	whole := newCache(t, cache.Options{Namespaces: []string{ns}})
	if _, err := cache.Register[*corev1.ConfigMap](whole, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, whole)
	unsharded := liveHeap() - heapBefore
	runtime.KeepAlive(replicas)

	filtering, lists, encoding := rec.paths()
	wantFiltering := "cache"
	if on, _ := env.FeatureGate("ShardedListAndWatch"); on {
		wantFiltering = "server"
	}
	if filtering != wantFiltering {
		t.Errorf("shard filtering in the %s, want in the %s (kube-apiserver %s, ShardedListAndWatch %s)", filtering, wantFiltering, env.ServerVersion(), gateState("ShardedListAndWatch"))
	}
	wantLists := "list"
	if on, _ := env.FeatureGate("WatchList"); on {
		wantLists = "watchlist"
	}
	if lists != wantLists {
		t.Errorf("initial lists by %s, want %s (kube-apiserver %s, WatchList %s)", lists, wantLists, env.ServerVersion(), gateState("WatchList"))
	}
	if encoding != "protobuf" {
		t.Errorf("a built-in type's lists and watches in %s, want protobuf", encoding)
	}
	t.Logf("matrix-paths: server=%s sharding=%s lists=%s encoding=%s heap-per-replica=%.1fMiB heap-unsharded=%.1fMiB objects=%d",
		env.ServerVersion(), filtering, lists, encoding, mib(perReplica), mib(unsharded), n)
}

func gateState(name string) string {
	switch on, known := env.FeatureGate(name); {
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
// "cache"), how the initial
// lists were made ("watchlist": streaming lists only; "list": a LIST), and
// the encoding asked for.
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
