package cache

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// A registration made while the last hold of the same key is going is a
// new one, and the old one's stop, which comes after, deletes none of its
// series: dropLocked forgets the old series under the cache's lock, before
// the new registration can make its own.
func TestDropForgetsBeforeANewRegistration(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	old, err := Register[*corev1.ConfigMap](c, TypeOptions{Owner: "old"})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	stop := c.dropLocked(old.reg)
	c.mu.Unlock()
	next, err := Register[*corev1.ConfigMap](c, TypeOptions{Owner: "new"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if next.reg == old.reg {
		t.Fatal("a registration being dropped was reused")
	}
	for name, col := range map[string]prometheus.Collector{"relists": c.metrics.relists, "watch restarts": c.metrics.watchRestarts, "sync errors": c.metrics.syncErrors} {
		if n := testutil.CollectAndCount(col); n == 0 {
			t.Errorf("the new registration has no %s series: the old one's stop deleted them", name)
		}
	}
}
