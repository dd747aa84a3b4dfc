package cache_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// A slot set swapped out while its informer's watch request is still on
// its way ends that request canceled, on purpose: that is no failure to
// log, nor the type's error in Status (which the manager's readiness
// check reads). The scale-out benchmark's replicas logged "List or watch
// failed ... context canceled" at error level as their slots moved (and
// client-go's "Failed to watch": internal/informer's
// TestStoppingLogsNoWatchFailure).
func TestSetSlotsCancelsAWatchOnItsWayWithoutAnError(t *testing.T) {
	ns := env.Namespace(t)
	createShardConfigMaps(t, ns, 20)
	s, _ := sharding.NewSlots(shardSlots)
	// The informers of slots 0-11, made by a move, list the gained slots
	// and then watch from the version of that list: that watch is held.
	held := slotRange(0, 11)
	sel, _ := s.Selector(sharding.ByUID, held)
	hold := &holdWatch{selector: sel, arrived: make(chan struct{})}
	hc := wrappedClient(t, func(next http.RoundTripper) http.RoundTripper { hold.next = next; return hold })
	var mu sync.Mutex
	var failures []string
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, "failed") {
			mu.Lock()
			failures = append(failures, args)
			mu.Unlock()
		}
	}, funcr.Options{})
	c := newCache(t, cache.Options{HTTPClient: hc, Logger: logger, Sharding: cache.ShardingOptions{Slots: s, ServerFilter: cache.ServerFilterOn}})
	if _, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{Namespaces: []string{ns}, Sharded: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSlots(t.Context(), slotRange(0, 7)); err != nil {
		t.Fatal(err)
	}
	start(t, c)
	if err := c.SetSlots(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer of slots 0-11 opened no watch")
	}
	if err := c.SetSlots(t.Context(), slotRange(4, 15)); err != nil {
		t.Fatal(err)
	}
	// The old informer stops after the swap; give its watch's cancel time
	// to land.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range c.Status() {
			if st.Err != nil {
				t.Fatalf("%v reads as failing after its slots moved, though its new informers list and watch: %v", st.GVK, st.Err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Errorf("logged a failure as its slots moved: %s", f)
	}
}

// holdWatch holds every watch that carries selector (not the lists, nor
// a streaming list) until its request is canceled, and says on arrived
// when the first one comes.
type holdWatch struct {
	next     http.RoundTripper
	selector string
	arrived  chan struct{}
	once     sync.Once
}

func (h *holdWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if q.Get("shardSelector") == h.selector && q.Get("watch") == "true" && q.Get("sendInitialEvents") != "true" {
		h.once.Do(func() { close(h.arrived) })
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return h.next.RoundTrip(req)
}
