package faults

import (
	"testing"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// histogramTotals sums the sample counts of the histograms called name in
// the operator's registry, and those counts in the bucket le=60.
func (op *operator) histogramTotals(t *testing.T, name string) (count, under60 uint64) {
	t.Helper()
	mfs, err := op.mgr.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			count += h.GetSampleCount()
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == 60 {
					under60 += b.GetCumulativeCount()
				}
			}
		}
	}
	return count, under60
}

// The Mirror operator, as the manager wires it, keeps every part of the
// event lag: after a source is mirrored and changed, each lag histogram has
// observations, all under a minute.
func TestEventLagInOperator(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(2)
	op := startOperator(t, opOptions{})
	w.configMap(w.home, "lag-src", map[string]string{"v": "0"})
	w.mirror("lag", "lag-src", w.selector())
	w.eventually("copies", w.copiesEqual(nss, "lag-src", map[string]string{"v": "0"}))
	if err := w.setData(w.home, "lag-src", map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	w.eventually("copies updated", w.copiesEqual(nss, "lag-src", map[string]string{"v": "1"}))
	for _, name := range []string{imetrics.CacheEventLag, imetrics.SourceEventLag, imetrics.ControllerEventLag} {
		count, under60 := op.histogramTotals(t, name)
		t.Logf("%s: %d observations", name, count)
		if count == 0 || under60 != count {
			t.Errorf("%s: %d observations, %d under 60s; want some, all under 60s", name, count, under60)
		}
	}
}
