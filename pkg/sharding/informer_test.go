package sharding_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// An informer given TweakListOptions caches exactly its slots' objects (the
// informer lists with a streaming watch, not a LIST), and the tweak keeps
// the label selector it is combined with.
func TestInformerWithTweak(t *testing.T) {
	env.RequireFeatureGate(t, shardGate)
	ns := env.Namespace(t)
	all := createConfigMaps(t, []string{ns}, 60, ns)
	s, err := sharding.NewSlots(4)
	if err != nil {
		t.Fatal(err)
	}
	held := []int{1, 2}
	sel, err := s.Selector(sharding.ByUID, held)
	if err != nil {
		t.Fatal(err)
	}
	tweak := sharding.TweakListOptions(sel)
	factory := metadatainformer.NewFilteredSharedInformerFactory(metadataClient(t, env.Config()), 0, ns, func(o *metav1.ListOptions) {
		o.LabelSelector = "run=" + ns
		tweak(o)
	})
	inf := factory.ForResource(configMaps).Informer()
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	var want, got []string
	for id, obj := range all {
		if slices.Contains(held, s.SlotOf(sharding.ByUID, obj)) {
			want = append(want, id)
		}
	}
	for _, obj := range inf.GetStore().List() {
		m := obj.(metav1.Object)
		got = append(got, m.GetNamespace()+"/"+m.GetName())
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cached objects of slots %v (-want +got):\n%s", held, diff)
	}
}
