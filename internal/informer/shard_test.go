package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informer"
)

// lowerHalf selects the objects whose UID hashes into the lower half of
// the hash space.
var lowerHalf = apisharding.NewSelector(apisharding.ShardRangeRequirement{
	Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000",
})

// inLowerHalf says, without the selector, whether uid is in lowerHalf.
func inLowerHalf(t *testing.T, uid string) bool {
	h, err := strconv.ParseUint(apisharding.HashField(uid), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return h < 1<<63
}

// shardServer is a ListerWatcher that records the shard selectors it is
// sent. It answers lists with its objects, with ShardInfo set to info if
// not nil, and watches with watch.
type shardServer struct {
	objects []corev1.ConfigMap
	info    *metav1.ShardInfo
	watch   *watch.RaceFreeFakeWatcher

	mu        sync.Mutex
	selectors []string
}

func (s *shardServer) note(opts metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.selectors = append(s.selectors, opts.ShardSelector)
}

func (s *shardServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.selectors)
}

func (s *shardServer) List(opts metav1.ListOptions) (runtime.Object, error) {
	s.note(opts)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1", ShardInfo: s.info}}
	list.Items = slices.Clone(s.objects)
	return list, nil
}

func (s *shardServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	s.note(opts)
	return s.watch, nil
}

// IsWatchListSemanticsUnSupported makes the reflector list, then watch,
// rather than stream the list: the informer must pass this on.
func (s *shardServer) IsWatchListSemanticsUnSupported() bool { return true }

// uidConfigMaps returns n ConfigMaps named "cm-<i>", with UIDs as the API
// server makes them (UUIDs, which FNV-1a spreads where short names that
// differ in one digit would all land in one half), and the names of
// those in lowerHalf.
func uidConfigMaps(t *testing.T, n int) (all []corev1.ConfigMap, lower []string) {
	for i := range n {
		name := fmt.Sprint("cm-", i)
		cm := configMap(name, "1")
		cm.UID = uid(name)
		cm.ResourceVersion = "1"
		all = append(all, *cm)
		if inLowerHalf(t, string(cm.UID)) {
			lower = append(lower, name)
		}
	}
	if len(lower) == 0 || len(lower) == n {
		t.Fatalf("%d of %d objects in the lower half: pick other names", len(lower), n)
	}
	return all, lower
}

// uid returns a UUID made from name.
func uid(name string) types.UID {
	return types.UID(uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)).String())
}

func storedNames(inf *informer.Informer) []string {
	var names []string
	for _, obj := range inf.GetStore().List() {
		names = append(names, obj.(*corev1.ConfigMap).Name)
	}
	slices.Sort(names)
	return names
}

// An API server that ignores the shard selector (no ShardInfo in its
// lists) sends everything: the informer keeps only what the selector
// matches, from the list and from the watch, and sends the selector on
// both.
func TestShardSelectorFiltersWhatTheServerDoesNot(t *testing.T) {
	objs, lower := uidConfigMaps(t, 40)
	srv := &shardServer{objects: objs[:20], watch: watch.NewRaceFreeFake()}
	inf := informer.New(srv, &corev1.ConfigMap{}, informer.Options{})
	if err := inf.SetShardSelector(lowerHalf); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	for _, cm := range objs[20:] {
		srv.watch.Add(cm.DeepCopy())
	}
	// A last object of the lower half: once it is stored, every event
	// before it has been handled.
	last := configMap("last", "1")
	for i := 0; ; i++ {
		last.UID = uid(fmt.Sprint("last-", i))
		if inLowerHalf(t, string(last.UID)) {
			break
		}
	}
	srv.watch.Add(last)
	eventually(t, "the last watch event", func() bool { _, ok, _ := inf.GetStore().Get(last); return ok })

	want := append(slices.Clone(lower), "last")
	slices.Sort(want)
	if diff := cmp.Diff(want, storedNames(inf)); diff != "" {
		t.Errorf("stored objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{lowerHalf.String(), lowerHalf.String()}, srv.sent()); diff != "" {
		t.Errorf("shard selectors sent on the list and the watch (-want +got):\n%s", diff)
	}
}

// A list the API server says it filtered with the selector is stored
// whole; one it says it filtered with another selector is an error.
func TestShardSelectorTrustsTheServersShardInfo(t *testing.T) {
	objs, _ := uidConfigMaps(t, 20)
	var names []string
	for _, cm := range objs {
		names = append(names, cm.Name)
	}
	slices.Sort(names)

	srv := &shardServer{objects: objs, info: &metav1.ShardInfo{Selector: lowerHalf.String()}, watch: watch.NewRaceFreeFake()}
	inf := informer.New(srv, &corev1.ConfigMap{}, informer.Options{})
	if err := inf.SetShardSelector(lowerHalf); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if diff := cmp.Diff(names, storedNames(inf)); diff != "" {
		t.Errorf("stored objects of a list the server filtered (-want +got):\n%s", diff)
	}

	other := &shardServer{objects: objs, info: &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000')"}, watch: watch.NewRaceFreeFake()}
	inf = informer.New(other, &corev1.ConfigMap{}, informer.Options{})
	if err := inf.SetShardSelector(lowerHalf); err != nil {
		t.Fatal(err)
	}
	listErr := make(chan error, 1)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		select {
		case listErr <- err:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case err := <-listErr:
		if !errors.Is(err, informer.ErrConflictingShardSelector) {
			t.Errorf("list error for another selector's ShardInfo: %v, want one wrapping ErrConflictingShardSelector", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("no list error for another selector's ShardInfo")
	}
}

// Without a selector, or with an empty one, nothing is sent and nothing
// filtered.
func TestEmptyShardSelectorSelectsEverything(t *testing.T) {
	objs, _ := uidConfigMaps(t, 20)
	for name, sel := range map[string]apisharding.Selector{"unset": nil, "nil": nil, "Everything": apisharding.Everything()} {
		t.Run(name, func(t *testing.T) {
			srv := &shardServer{objects: objs, watch: watch.NewRaceFreeFake()}
			inf := informer.New(srv, &corev1.ConfigMap{}, informer.Options{})
			if name != "unset" {
				if err := inf.SetShardSelector(sel); err != nil {
					t.Fatal(err)
				}
			}
			run(t, inf)
			if got := len(inf.GetStore().List()); got != len(objs) {
				t.Errorf("stored %d objects, want all %d", got, len(objs))
			}
			for _, s := range srv.sent() {
				if s != "" {
					t.Errorf("sent shard selector %q, want none", s)
				}
			}
		})
	}
}

// Only before Run, as client-go's, and the last call wins: afterwards it
// is refused and the informer keeps its selector.
func TestSetShardSelectorAfterStartFails(t *testing.T) {
	objs, lower := uidConfigMaps(t, 20)
	srv := &shardServer{objects: objs, watch: watch.NewRaceFreeFake()}
	inf := informer.New(srv, &corev1.ConfigMap{}, informer.Options{})
	if err := inf.SetShardSelector(apisharding.Everything()); err != nil {
		t.Fatal(err)
	}
	if err := inf.SetShardSelector(lowerHalf); err != nil { // the last call wins
		t.Fatal(err)
	}
	run(t, inf)
	if err := inf.SetShardSelector(apisharding.Everything()); err == nil {
		t.Error("SetShardSelector after Run: no error")
	}
	for i, s := range srv.sent() {
		if s != lowerHalf.String() {
			t.Errorf("request %d sent shard selector %q, want %q", i, s, lowerHalf.String())
		}
	}
	slices.Sort(lower)
	if diff := cmp.Diff(lower, storedNames(inf)); diff != "" {
		t.Errorf("stored objects (-want +got):\n%s", diff)
	}
}
