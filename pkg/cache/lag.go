package cache

import (
	"time"

	"github.com/opkit-dev/opkit/internal/informer"
)

// TimedEventHandler is an optional ability of a handler passed to
// Lister.AddEventHandler: with the cache's metrics on (Options.Registerer),
// the cache calls these methods instead of the ResourceEventHandler ones,
// with changed, the estimated time of the change at the API server (see
// opkit_cache_event_lag_seconds for how it is estimated), or the zero time
// when no timestamp of the object is usable, and delivered, the time of
// the event's delivery to the handler, with a monotonic clock reading, so
// that the handler may time its work without a clock reading of its own.
// pkg/source's handlers implement it to measure a controller's lag end to
// end.
type TimedEventHandler interface {
	OnAddAt(obj any, isInInitialList bool, changed, delivered time.Time)
	OnUpdateAt(oldObj, newObj any, changed, delivered time.Time)
	OnDeleteAt(obj any, changed, delivered time.Time)
}

// The cache's informers hand the change times to a TimedEventHandler.
var _ informer.TimedEventHandler = TimedEventHandler(nil)
