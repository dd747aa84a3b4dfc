package cache

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/internal/informer"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

var syncErrorClasses = []string{imetrics.SyncErrorForbidden, imetrics.SyncErrorExpired, imetrics.SyncErrorDecode, imetrics.SyncErrorConnection, imetrics.SyncErrorList, imetrics.SyncErrorWatch}

// lagEvents are the values of opkit_cache_event_lag_seconds's event label.
var lagEvents = []string{"add", "update", "delete"}

var metricLabels = []string{"group", "version", "kind", "form", "scope"}

type metrics struct {
	objects       *prometheus.Desc
	objectBytes   *prometheus.Desc
	slots         *prometheus.Desc
	holds         *prometheus.Desc // by type and owner
	relists       *prometheus.CounterVec
	watchRestarts *prometheus.CounterVec
	firstSync     *prometheus.GaugeVec
	lag           *prometheus.HistogramVec // by type and event
	syncErrors    *prometheus.CounterVec   // by type and class
	lazyFetches   *prometheus.CounterVec
	lazyObjects   *prometheus.GaugeVec
	unregistered  *prometheus.CounterVec // by type and form
	cache         *Cache
}

// newMetrics registers the cache's metrics with reg; it returns nil, which
// keeps none, when reg is nil.
func newMetrics(reg prometheus.Registerer, c *Cache) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		objects: prometheus.NewDesc(imetrics.CacheObjects, "Objects in the cache, by type.", metricLabels, nil),
		objectBytes: prometheus.NewDesc(imetrics.CacheObjectBytes,
			"Estimated encoded bytes of the objects in the cache, by type: the objects times their mean size, sampled at ingest (protobuf, else JSON).", metricLabels, nil),
		slots: prometheus.NewDesc(imetrics.CacheSlots, "Slots a sharded type holds, by type.", metricLabels, nil),
		holds: prometheus.NewDesc(imetrics.CacheHolds, "Listers each named owner holds on a type (TypeOptions.Owner), by type and owner.",
			append(slices.Clone(metricLabels), "owner"), nil),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: imetrics.CacheRelists, Help: "Full lists after the first, by type.",
		}, metricLabels),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: imetrics.CacheWatchRestarts, Help: "Watches opened after the first, by type.",
		}, metricLabels),
		firstSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: imetrics.CacheFirstSync, Help: "Seconds from Start (or registration, if later) until the type first synced.",
		}, metricLabels),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: imetrics.CacheEventLag, Help: "Seconds from a change at the API server to the informer's delivery of its event, by type and event; estimated from the object's timestamps (whole seconds); a sample of the events above 2,000 a second per informer.",
			Buckets: imetrics.LagBuckets, // 1ms to 60s
		}, []string{"type", "event"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: imetrics.CacheSyncErrors, Help: "Failed lists and watches of the informers, by type and class.",
		}, []string{"type", "class"}),
		lazyFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: imetrics.CacheLazyFetches, Help: "GETs of full objects by LazyListers, by type.",
		}, metricLabels),
		lazyObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: imetrics.CacheLazyObjects, Help: "Full objects held by LazyListers, by type.",
		}, metricLabels),
		unregistered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: imetrics.CacheUnregisteredReads, Help: "Reads through the cached client of a kind nobody registered, by type and form.",
		}, []string{"type", "form"}),
		cache: c,
	}
	for _, col := range []prometheus.Collector{objectsCollector{m}, m.relists, m.watchRestarts, m.firstSync, m.lag, m.syncErrors, m.lazyFetches, m.lazyObjects, m.unregistered} {
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
	for _, c := range syncErrorClasses {
		m.syncErrors.WithLabelValues(r.typeLabel(), c)
	}
}

// typeLabel is the type label of opkit_cache_event_lag_seconds and opkit_cache_sync_errors_total, as
// pkg/source and pkg/controller spell types: "v1/ConfigMap".
func (r *registration) typeLabel() string { return typeLabel(r.key.gvk) }

func typeLabel(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

func (m *metrics) syncError(r *registration, class string) {
	if m != nil {
		r.ifLive(func() { m.syncErrors.WithLabelValues(r.typeLabel(), class).Inc() })
	}
}

// ifLive calls f unless r is removed, with r.mu held: a series f makes
// or changes is made before dropLocked forgets r's series, or not at all,
// so that a removed registration's informers, still stopping, leave
// none behind. f must not take r.mu or c.mu.
func (r *registration) ifLive(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.removed {
		f()
	}
}

// informerLag returns what has one of r's informers observe
// opkit_cache_event_lag_seconds, or nil without metrics.
func (m *metrics) informerLag(r *registration) *informer.Lag {
	if m == nil {
		return nil
	}
	o := func(event string) func(float64) { return m.lag.WithLabelValues(r.typeLabel(), event).Observe }
	return &informer.Lag{Add: o(lagEvents[0]), Update: o(lagEvents[1]), Delete: o(lagEvents[2])}
}

// lazyRegistered starts r's LazyLister metrics at zero.
func (m *metrics) lazyRegistered(r *registration) {
	if m != nil {
		m.lazyFetches.WithLabelValues(r.labels()...)
		m.lazyObjects.WithLabelValues(r.labels()...)
	}
}

func (m *metrics) lazyFetch(r *registration) {
	if m != nil {
		r.ifLive(func() { m.lazyFetches.WithLabelValues(r.labels()...).Inc() })
	}
}

func (m *metrics) lazyHeld(r *registration, delta float64) {
	if m != nil {
		r.ifLive(func() { m.lazyObjects.WithLabelValues(r.labels()...).Add(delta) })
	}
}

func (m *metrics) unregisteredRead(gvk schema.GroupVersionKind, f form) {
	if m != nil {
		m.unregistered.WithLabelValues(typeLabel(gvk), f.String()).Inc()
	}
}

func (m *metrics) relist(r *registration) {
	if m != nil {
		r.ifLive(func() { m.relists.WithLabelValues(r.labels()...).Inc() })
	}
}

func (m *metrics) watchRestart(r *registration) {
	if m != nil {
		r.ifLive(func() { m.watchRestarts.WithLabelValues(r.labels()...).Inc() })
	}
}

func (m *metrics) synced(r *registration, d time.Duration) {
	if m != nil {
		r.ifLive(func() { m.firstSync.WithLabelValues(r.labels()...).Set(d.Seconds()) })
	}
}

// forgetLocked deletes the series of r, removed, that no registration of
// live (the cache's others) shares: registrations that differ only in
// stripping or sharding share their labels, and registrations of one kind
// share the type label. The caller holds c.mu, so no registration of the
// same key is made meanwhile.
func (m *metrics) forgetLocked(r *registration, live []*registration) {
	if m == nil {
		return
	}
	labels, sameLabels, sameKind := r.labels(), false, false
	for _, o := range live {
		sameKind = sameKind || o.key.gvk == r.key.gvk
		sameLabels = sameLabels || slices.Equal(o.labels(), labels)
	}
	if !sameLabels {
		m.relists.DeleteLabelValues(labels...)
		m.watchRestarts.DeleteLabelValues(labels...)
		m.firstSync.DeleteLabelValues(labels...)
		m.lazyFetches.DeleteLabelValues(labels...)
		m.lazyObjects.DeleteLabelValues(labels...)
	}
	if !sameKind {
		typ := prometheus.Labels{"type": r.typeLabel()}
		m.lag.DeletePartialMatch(typ)
		m.syncErrors.DeletePartialMatch(typ)
	}
}

// holdsLocked returns the opkit_cache_holds series of regs, summed over
// registrations that share their labels. The caller holds c.mu.
func (m *metrics) holdsLocked(regs []*registration) []prometheus.Metric {
	type series struct {
		labels []string
		n      int
	}
	sum := map[string]*series{}
	var order []string
	for _, r := range regs {
		for owner, n := range r.holds {
			labels := append(r.labels(), owner)
			k := strings.Join(labels, "\x00")
			if sum[k] == nil {
				sum[k] = &series{labels: labels}
				order = append(order, k)
			}
			sum[k].n += n
		}
	}
	out := make([]prometheus.Metric, 0, len(order))
	for _, k := range order {
		out = append(out, prometheus.MustNewConstMetric(m.holds, prometheus.GaugeValue, float64(sum[k].n), sum[k].labels...))
	}
	return out
}

// objectsCollector counts cached objects when scraped, so that the cache
// keeps no counter of its own on the path of every event, and estimates
// their bytes from that count and each informer's sampled mean size.
type objectsCollector struct{ m *metrics }

func (o objectsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.m.objects
	ch <- o.m.objectBytes
	ch <- o.m.slots
	ch <- o.m.holds
}

func (o objectsCollector) Collect(ch chan<- prometheus.Metric) {
	o.m.cache.mu.Lock()
	regs := append([]*registration(nil), o.m.cache.regs...)
	holds := o.m.holdsLocked(regs)
	o.m.cache.mu.Unlock()
	for _, h := range holds {
		ch <- h
	}
	for _, r := range regs {
		v := r.view.Load()
		if v == nil {
			continue
		}
		n, bytes := 0, 0.0
		for _, i := range v.informers {
			k := len(i.indexer.ListKeys())
			n += k
			bytes += float64(k) * i.sizes.mean()
		}
		ch <- prometheus.MustNewConstMetric(o.m.objects, prometheus.GaugeValue, float64(n), r.labels()...)
		ch <- prometheus.MustNewConstMetric(o.m.objectBytes, prometheus.GaugeValue, bytes, r.labels()...)
		if r.key.sharded {
			ch <- prometheus.MustNewConstMetric(o.m.slots, prometheus.GaugeValue, float64(len(v.held)), r.labels()...)
		}
	}
}
