package cache

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func stamped(name string, write time.Time, del *metav1.Time) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, ResourceVersion: "2",
		CreationTimestamp: metav1.NewTime(write.Add(-time.Hour)),
		DeletionTimestamp: del,
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "a", Time: &metav1.Time{Time: write.Add(-time.Minute)}},
			{Manager: "b", Time: &metav1.Time{Time: write}},
		},
	}}
}

// The change times are read before the stripping transform and found again
// by the stripped object: the newest managedFields time for adds and
// updates, the later of it and the deletionTimestamp for deletes, none
// for a delete without a deletionTimestamp, a resync or an inferred
// delete.
func TestStampsReadBeforeStripping(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	deleted := metav1.NewTime(write.Add(time.Second))
	s := newStamps()
	ingest := s.wrap(ingestTransform(TypeOptions{}, nil, newCompactor()))
	obj, err := ingest(stamped("a", write, nil))
	if err != nil {
		t.Fatal(err)
	}
	if mf := obj.(*corev1.ConfigMap).ManagedFields; mf != nil {
		t.Fatalf("managedFields not stripped: %v", mf)
	}
	gone, _ := ingest(stamped("b", write, &deleted))
	old := stamped("a", write, nil)
	old.ResourceVersion = "1"
	for _, tc := range []struct {
		name      string
		got, want time.Time
	}{
		{"add", s.addTime(obj), write},
		{"update", s.updateTime(old, obj), write},
		{"resync", s.updateTime(obj, obj), time.Time{}},
		{"delete without deletionTimestamp", s.deleteTime(obj), time.Time{}},
		{"delete", s.deleteTime(gone), deleted.Time},
		{"update that starts a deletion", s.updateTime(old, gone), deleted.Time},
		{"not ingested", s.addTime(stamped("c", write, nil)), time.Time{}},
	} {
		if !tc.got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The table forgets the oldest object once maxStamps later ones were
// ingested, and keeps one recorded again meanwhile.
func TestStampsForgetTheOldest(t *testing.T) {
	write := time.Unix(1_700_000_000, 0)
	s := newStamps()
	ingest := s.wrap(func(obj any) (any, error) { return obj, nil })
	first, again := stamped("first", write, nil), stamped("again", write, nil)
	ingest(first)
	ingest(again)
	for i := range maxStamps - 1 {
		ingest(stamped(strconv.Itoa(i), write, nil))
	}
	ingest(again) // recorded again: its first entry's eviction must keep it
	if !s.addTime(first).IsZero() {
		t.Error("the oldest entry is still known")
	}
	if s.addTime(again).IsZero() {
		t.Error("an entry recorded again was forgotten with its older record")
	}
	if len(s.m) > maxStamps {
		t.Errorf("%d entries, want at most %d", len(s.m), maxStamps)
	}
}

// BenchmarkEventLagStamps is the cache's part of the lag metrics' cost per
// event: the stripping transform alone (off) and with the change times
// remembered, looked up by the lag observer (observing
// opkit_cache_event_lag_seconds) and by one timed handler (on).
func BenchmarkEventLagStamps(b *testing.B) {
	objs := make([]*corev1.ConfigMap, 1000)
	now := time.Now()
	for i := range objs {
		objs[i] = stamped(strconv.Itoa(i), now, nil)
	}
	old := stamped("old", now, nil)
	old.ResourceVersion = "1"
	b.Run("off", func(b *testing.B) {
		ingest := ingestTransform(TypeOptions{KeepManagedFields: true}, nil, newCompactor())
		for i := 0; b.Loop(); i++ {
			_, _ = ingest(objs[i%len(objs)])
		}
	})
	b.Run("on", func(b *testing.B) {
		s := newStamps()
		ingest := s.wrap(ingestTransform(TypeOptions{KeepManagedFields: true}, nil, newCompactor()))
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lag"})
		lo := lagObserver{stamps: s, add: h.Observe, update: h.Observe, del: h.Observe, now: time.Now}
		th := timedHandler{h: nopTimed{}, stamps: s}
		for i := 0; b.Loop(); i++ {
			obj, _ := ingest(objs[i%len(objs)])
			lo.OnUpdate(old, obj)
			th.OnUpdate(old, obj)
		}
	})
}

type nopTimed struct{}

func (nopTimed) OnAddAt(any, bool, time.Time)   {}
func (nopTimed) OnUpdateAt(any, any, time.Time) {}
func (nopTimed) OnDeleteAt(any, time.Time)      {}
