package cache_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// TestShardedWrittenOfUnheldSlot: a write of an object of a slot the cache
// does not hold has nothing to wait for (the cache will never hold it),
// while one of a held slot waits until the cache has it.
func TestShardedWrittenOfUnheldSlot(t *testing.T) {
	ns := env.Namespace(t)
	s, _ := sharding.NewSlots(shardSlots)
	sc := newShardedCache(t, ns, 0, slotRange(0, 7))
	for range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Namespace: ns}}
		got, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := sc.c.Written(configMapGVK, got, false)
		if err := w.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err = sc.lister.Get(ns, got.Name)
		held := s.SlotOf(sharding.ByUID, got) < 8
		if held != (err == nil) {
			t.Fatalf("%s of slot %d: after Written.Wait, Get returned %v", got.Name, s.SlotOf(sharding.ByUID, got), err)
		}
	}
}
