package sharding_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// createConfigMaps creates n ConfigMaps labelled run=<label> spread over
// namespaces, and returns their UIDs by namespace/name.
func createConfigMaps(t *testing.T, namespaces []string, n int, label string) map[string]metav1.Object {
	t.Helper()
	all := map[string]metav1.Object{}
	for i := range n {
		ns := namespaces[i%len(namespaces)]
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"run": label}}}
		got, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ConfigMap: %v", err)
		}
		all[ns+"/"+got.Name] = got
	}
	return all
}

// listSlot lists the labelled ConfigMaps that the selector of slots returns.
func listSlot(t *testing.T, s sharding.Slots, key sharding.Key, label string, slots ...int) []metav1.Object {
	t.Helper()
	sel, err := s.Selector(key, slots)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{LabelSelector: "run=" + label}
	sharding.TweakListOptions(sel)(&opts)
	list, err := env.Client().CoreV1().ConfigMaps("").List(t.Context(), opts)
	if err != nil {
		t.Fatalf("list slots %v of %d: %v", slots, s.Count(), err)
	}
	out := make([]metav1.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// checkPartition lists each slot's objects through its own selector and
// checks that every object comes back exactly once, from the selector of
// the slot SlotOf computes for it.
func checkPartition(t *testing.T, s sharding.Slots, key sharding.Key, label string, want map[string]metav1.Object) {
	t.Helper()
	seen := map[string]int{}
	for slot := range s.Count() {
		for _, obj := range listSlot(t, s, key, label, slot) {
			id := obj.GetNamespace() + "/" + obj.GetName()
			if prev, ok := seen[id]; ok {
				t.Errorf("%d slots by %v: %s returned by slots %d and %d", s.Count(), key, id, prev, slot)
			}
			seen[id] = slot
			if got := s.SlotOf(key, obj); got != slot {
				t.Errorf("%d slots by %v: %s returned by slot %d's selector, SlotOf = %d", s.Count(), key, id, slot, got)
			}
		}
	}
	for id := range want {
		if _, ok := seen[id]; !ok {
			t.Errorf("%d slots by %v: %s returned by no slot", s.Count(), key, id)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d slots by %v: %d objects returned, want %d", s.Count(), key, len(seen), len(want))
	}
}

func TestSelectorsPartitionByUID(t *testing.T) {
	env.RequireFeatureGate(t, shardGate)
	ns := env.Namespace(t)
	want := createConfigMaps(t, []string{ns}, 200, ns)
	for _, count := range []int{1, 2, 8, 64} {
		s, err := sharding.NewSlots(count)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, s, sharding.ByUID, ns, want)
	}
}

func TestSelectorsPartitionByNamespace(t *testing.T) {
	env.RequireFeatureGate(t, shardGate)
	var namespaces []string
	for range 12 {
		namespaces = append(namespaces, env.Namespace(t))
	}
	want := createConfigMaps(t, namespaces, 48, namespaces[0])
	for _, count := range []int{2, 4, 16} {
		s, err := sharding.NewSlots(count)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, s, sharding.ByNamespace, namespaces[0], want)
	}
}

// Merged ranges select the union of their slots, and the worst case for
// length (every other slot of MaxSlots: 512 ranges) is accepted.
func TestMergedAndLongSelectors(t *testing.T) {
	env.RequireFeatureGate(t, shardGate)
	ns := env.Namespace(t)
	all := createConfigMaps(t, []string{ns}, 200, ns)
	s, err := sharding.NewSlots(sharding.MaxSlots)
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]func(slot int) bool{
		"even slots":   func(slot int) bool { return slot%2 == 0 },
		"first half":   func(slot int) bool { return slot < sharding.MaxSlots/2 },
		"last quarter": func(slot int) bool { return slot >= 3*sharding.MaxSlots/4 },
		"all":          func(int) bool { return true },
	}
	for name, in := range sets {
		var slots []int
		for slot := range s.Count() {
			if in(slot) {
				slots = append(slots, slot)
			}
		}
		var want, got []string
		for id, obj := range all {
			if in(s.SlotOf(sharding.ByUID, obj)) {
				want = append(want, id)
			}
		}
		for _, obj := range listSlot(t, s, sharding.ByUID, ns, slots...) {
			got = append(got, obj.GetNamespace()+"/"+obj.GetName())
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: listed objects (-want +got):\n%s", name, diff)
		}
	}
}

// Supported says what the server does: true where the gate is on (1.36+,
// which TestMain asks for), false without it, on every version.
func TestSupported(t *testing.T) {
	meta := metadataClient(t, env.Config())
	on, _ := env.FeatureGate(shardGate)
	ok, err := sharding.Supported(t.Context(), meta, configMaps, env.Namespace(t))
	if err != nil || ok != on {
		t.Errorf("Supported on kube-apiserver %s with %s on = %t: %t, %v; want %t", env.ServerVersion(), shardGate, on, ok, err, on)
	}

	plain, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := plain.Stop(); err != nil {
			t.Error(err)
		}
	})
	ok, err = sharding.Supported(t.Context(), metadataClient(t, plain.Config()), configMaps, metav1.NamespaceDefault)
	if err != nil || ok {
		t.Errorf("Supported without the gate = %t, %v, want false", ok, err)
	}
}

// A probe the caller may not make is an error naming what it needed, which
// apierrors sees through.
func TestSupportedForbidden(t *testing.T) {
	cfg := env.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "no-rights"}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	ok, err := sharding.Supported(t.Context(), metadataClient(t, cfg), leases, "operators")
	if ok || !apierrors.IsForbidden(err) {
		t.Fatalf("Supported as a user without RBAC = %t, %v, want a Forbidden error", ok, err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("errors.As(%v, APIStatus) = false", err)
	}
	for _, want := range []string{"leases.coordination.k8s.io", "namespace operators", "RBAC list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func metadataClient(t *testing.T, cfg *rest.Config) metadata.Interface {
	t.Helper()
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
