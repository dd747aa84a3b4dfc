package cache

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
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
	// MetricEventLag observes, per event an informer delivers, the seconds
	// from the change at the API server to the delivery, labelled by type
	// ("v1/ConfigMap", "apps/v1/Deployment") and event (add, update,
	// delete). The change time is estimated from the object's own
	// timestamps, read before the cache strips managedFields: the newest
	// managedFields time for adds and updates (the creationTimestamp for an
	// object without managedFields), the deletionTimestamp for deletes
	// (and for the update that sets it), or the newest managedFields time
	// if later (a finalizer removed after the delete request). They
	// have whole seconds, so an observation is up to 1s too long, and it
	// carries any skew between the API server's clock and the operator's.
	// Not observed: the adds of an informer's initial list (an object's
	// age is not lag), resync updates (nothing changed), deletes of
	// objects without a deletionTimestamp (deleted at once, with no
	// finalizer: most objects), inferred deletes (tombstones), objects
	// without a timestamp, and events delivered after maxStamps (4096)
	// later objects were ingested.
	MetricEventLag = "opkit_cache_event_lag_seconds"
	// MetricSyncErrors counts the informers' failed lists and watches by
	// type and class (see the SyncError constants): each failure counts
	// once, in the first class that matches in the order forbidden,
	// expired, decode, connection, then list_failed or watch_failed. A
	// failure is a list or watch request that fails, or a watch stream
	// whose connection fails midway (connection); the package doc says
	// what is not seen.
	MetricSyncErrors = "opkit_cache_sync_errors_total"
	// MetricLazyFetches counts the GETs of full objects that LazyListers
	// made, failed ones included, labelled like MetricObjects by the
	// metadata registration they read through (form "metadata").
	MetricLazyFetches = "opkit_cache_lazy_fetches_total"
	// MetricLazyObjects is the number of full objects LazyListers hold,
	// labelled like MetricLazyFetches.
	MetricLazyObjects = "opkit_cache_lazy_objects"
	// MetricSlots is the number of slots a sharded type (TypeOptions.Sharded)
	// holds, of ShardingOptions.Slots.Count(): with MetricObjects, the
	// share of the type this replica caches. Absent for types not sharded.
	MetricSlots = "opkit_cache_slots"
	// MetricUnregisteredReads counts the reads through LookupKind (the
	// cached client's) of a kind nobody registered, each an error for the
	// reader, labelled by type ("v1/Node") and form. A series appears with
	// the first such read: the kinds are not known before.
	MetricUnregisteredReads = "opkit_cache_unregistered_reads_total"
)

// The classes of MetricSyncErrors.
const (
	// SyncErrorForbidden: 403, RBAC refused the list or watch.
	SyncErrorForbidden = "forbidden"
	// SyncErrorExpired: 410 Gone or resource version too old; the
	// informer lists again.
	SyncErrorExpired = "expired"
	// SyncErrorDecode: a response body the client could not decode.
	SyncErrorDecode = "decode"
	// SyncErrorConnection: the connection was refused, reset or cut, or
	// ended early (EOF).
	SyncErrorConnection = "connection"
	// SyncErrorList and SyncErrorWatch: any other failed list or watch.
	SyncErrorList  = "list_failed"
	SyncErrorWatch = "watch_failed"
)

var syncErrorClasses = []string{SyncErrorForbidden, SyncErrorExpired, SyncErrorDecode, SyncErrorConnection, SyncErrorList, SyncErrorWatch}

// lagEvents are the values of MetricEventLag's event label.
var lagEvents = []string{"add", "update", "delete"}

var metricLabels = []string{"group", "version", "kind", "form", "scope"}

type metrics struct {
	objects       *prometheus.Desc
	slots         *prometheus.Desc
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
		objects: prometheus.NewDesc(MetricObjects, "Objects in the cache, by type.", metricLabels, nil),
		slots:   prometheus.NewDesc(MetricSlots, "Slots a sharded type holds, by type.", metricLabels, nil),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRelists, Help: "Full lists after the first, by type.",
		}, metricLabels),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWatchRestarts, Help: "Watches opened after the first, by type.",
		}, metricLabels),
		firstSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricFirstSync, Help: "Seconds from Start (or registration, if later) until the type first synced.",
		}, metricLabels),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricEventLag, Help: "Seconds from a change at the API server to the informer's delivery of its event, by type and event; estimated from the object's timestamps (whole seconds).",
			Buckets: imetrics.LagBuckets, // 1ms to 60s
		}, []string{"type", "event"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSyncErrors, Help: "Failed lists and watches of the informers, by type and class.",
		}, []string{"type", "class"}),
		lazyFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricLazyFetches, Help: "GETs of full objects by LazyListers, by type.",
		}, metricLabels),
		lazyObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricLazyObjects, Help: "Full objects held by LazyListers, by type.",
		}, metricLabels),
		unregistered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricUnregisteredReads, Help: "Reads through the cached client of a kind nobody registered, by type and form.",
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

// typeLabel is the type label of MetricEventLag and MetricSyncErrors, as
// pkg/source and pkg/controller spell types: "v1/ConfigMap".
func (r *registration) typeLabel() string { return typeLabel(r.key.gvk) }

func typeLabel(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

func (m *metrics) syncError(r *registration, class string) {
	if m != nil {
		m.syncErrors.WithLabelValues(r.typeLabel(), class).Inc()
	}
}

// lagObserver returns the handler that observes MetricEventLag for one of
// r's informers, or nil without metrics.
func (m *metrics) lagObserver(r *registration, s *stamps) toolscache.ResourceEventHandler {
	if m == nil {
		return nil
	}
	o := func(event string) func(float64) { return m.lag.WithLabelValues(r.typeLabel(), event).Observe }
	return lagObserver{stamps: s, add: o(lagEvents[0]), update: o(lagEvents[1]), del: o(lagEvents[2]), now: time.Now}
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
		m.lazyFetches.WithLabelValues(r.labels()...).Inc()
	}
}

func (m *metrics) lazyHeld(r *registration, delta float64) {
	if m != nil {
		m.lazyObjects.WithLabelValues(r.labels()...).Add(delta)
	}
}

func (m *metrics) unregisteredRead(gvk schema.GroupVersionKind, f Form) {
	if m != nil {
		m.unregistered.WithLabelValues(typeLabel(gvk), f.String()).Inc()
	}
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
	m.lazyFetches.DeleteLabelValues(r.labels()...)
	m.lazyObjects.DeleteLabelValues(r.labels()...)
}

// objectsCollector counts cached objects when scraped, so that the cache
// keeps no counter of its own on the path of every event.
type objectsCollector struct{ m *metrics }

func (o objectsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.m.objects
	ch <- o.m.slots
}

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
		if r.key.sharded {
			ch <- prometheus.MustNewConstMetric(o.m.slots, prometheus.GaugeValue, float64(len(v.held)), r.labels()...)
		}
	}
}
