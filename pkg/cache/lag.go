package cache

import (
	"github.com/opkit-dev/opkit/internal/informer"
)

// timedEventHandler is an optional ability of a handler passed to
// Lister.AddEventHandler: with the cache's metrics on (Options.Registerer),
// the cache calls its methods instead of the ResourceEventHandler ones,
// with the estimated time of the change at the API server (see
// opkit_cache_event_lag_seconds) and the time of the event's delivery.
// pkg/source's handlers implement it to measure a controller's lag end to
// end; it is internal/informer's, which the informers call.
type timedEventHandler = informer.TimedEventHandler
