package cache

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The cache's metrics, kept when Options.Registerer is set. Each is
// labelled with the type's group, version and kind, its form (typed,
// metadata or unstructured) and its scope (namespaces and selectors, "*"
// for everything).
const (
	// MetricObjects is the number of objects cached.
	MetricObjects = "opkit_cache_objects"
	// MetricRelists counts full lists (or streaming lists) after the first,
	// which the informer makes when its watch falls too far behind.
	MetricRelists = "opkit_cache_relists_total"
	// MetricWatchRestarts counts watches opened after the first.
	MetricWatchRestarts = "opkit_cache_watch_restarts_total"
	// MetricFirstSync is the seconds from Start (or from the type's
	// registration, if later) until the type first synced.
	MetricFirstSync = "opkit_cache_first_sync_seconds"
)

var metricLabels = []string{"group", "version", "kind", "form", "scope"}

type metrics struct {
	objects       *prometheus.Desc
	relists       *prometheus.CounterVec
	watchRestarts *prometheus.CounterVec
	firstSync     *prometheus.GaugeVec
	cache         *Cache
}

// newMetrics registers the cache's metrics with reg; it returns nil, which
// keeps none, when reg is nil.
func newMetrics(reg prometheus.Registerer, c *Cache) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		objects: prometheus.NewDesc(MetricObjects, "Objects in the cache, by type.", metricLabels, nil),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRelists, Help: "Full lists after the first, by type.",
		}, metricLabels),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWatchRestarts, Help: "Watches opened after the first, by type.",
		}, metricLabels),
		firstSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricFirstSync, Help: "Seconds from Start (or registration, if later) until the type first synced.",
		}, metricLabels),
		cache: c,
	}
	for _, col := range []prometheus.Collector{objectsCollector{m}, m.relists, m.watchRestarts, m.firstSync} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (r *registration) labels() []string {
	scope := "*"
	if r.key.namespaces != "" || r.key.selector != "" {
		scope = r.key.namespaces
		if r.key.selector != "" {
			scope += "; " + r.key.selector
		}
	}
	return []string{r.key.gvk.Group, r.key.gvk.Version, r.key.gvk.Kind, r.key.form.String(), scope}
}

func (m *metrics) registered(r *registration) {
	if m == nil {
		return
	}
	// Start the counters at zero, so that rates work from the first scrape.
	m.relists.WithLabelValues(r.labels()...)
	m.watchRestarts.WithLabelValues(r.labels()...)
}

func (m *metrics) relist(r *registration) {
	if m != nil {
		m.relists.WithLabelValues(r.labels()...).Inc()
	}
}

func (m *metrics) watchRestart(r *registration) {
	if m != nil {
		m.watchRestarts.WithLabelValues(r.labels()...).Inc()
	}
}

func (m *metrics) synced(r *registration, d time.Duration) {
	if m != nil {
		m.firstSync.WithLabelValues(r.labels()...).Set(d.Seconds())
	}
}

func (m *metrics) forget(r *registration) {
	if m == nil {
		return
	}
	m.relists.DeleteLabelValues(r.labels()...)
	m.watchRestarts.DeleteLabelValues(r.labels()...)
	m.firstSync.DeleteLabelValues(r.labels()...)
}

// objectsCollector counts cached objects when scraped, so that the cache
// keeps no counter of its own on the path of every event.
type objectsCollector struct{ m *metrics }

func (o objectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- o.m.objects }

func (o objectsCollector) Collect(ch chan<- prometheus.Metric) {
	o.m.cache.mu.Lock()
	regs := append([]*registration(nil), o.m.cache.regs...)
	o.m.cache.mu.Unlock()
	for _, r := range regs {
		v := r.view.Load()
		if v == nil {
			continue
		}
		n := 0
		for _, i := range v.informers {
			n += len(i.indexer.ListKeys())
		}
		ch <- prometheus.MustNewConstMetric(o.m.objects, prometheus.GaugeValue, float64(n), r.labels()...)
	}
}
