package cache

import (
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/informer"
	"github.com/opkit-dev/opkit/internal/informerlag"
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

// informerlag's handlers hand the change times to a TimedEventHandler.
var _ informerlag.TimedEventHandler = TimedEventHandler(nil)

// addHandler adds h to the informer. With metrics on, the caller wrapped
// it with i.lag.Handler, as lh, which observes opkit_cache_event_lag_seconds
// for the events delivered to it first, so the informer's own lag
// listener, which observes it while no handler does, is removed: each
// listener costs the informer a goroutine pair and a hand-off per event.
// lh is released if h is not added. The caller holds the registration's
// mu.
func (i *nsInformer) addHandler(h toolscache.ResourceEventHandler, lh *informerlag.Handler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.informer.AddEventHandler(h)
	if err != nil {
		lh.Release()
		return reg, err
	}
	if i.lag == nil {
		return reg, nil
	}
	i.keepLagHandler(reg, lh)
	i.handlers++
	if i.lagListener != nil {
		_ = i.informer.RemoveEventHandler(i.lagListener)
		i.lagHandlers[i.lagListener].Release()
		delete(i.lagHandlers, i.lagListener)
		i.lagListener = nil
	}
	return reg, nil
}

// removeHandler removes a handler added with addHandler, and releases its
// lag handler, which would otherwise keep the change times of every
// object ingested since; the last one's removal brings the lag listener
// back. The caller holds the registration's mu.
func (i *nsInformer) removeHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	if err := i.informer.RemoveEventHandler(reg); err != nil {
		return err
	}
	if i.lag == nil {
		return nil
	}
	i.lagHandlers[reg].Release()
	delete(i.lagHandlers, reg)
	i.handlers--
	return i.listenIfUnheard()
}

// listenIfUnheard adds the lag listener to an informer with metrics and no
// handler, which would otherwise observe no lag.
func (i *nsInformer) listenIfUnheard() error {
	if i.lag == nil || i.handlers > 0 || i.lagListener != nil {
		return nil
	}
	lh := i.lag.Listener()
	reg, err := i.informer.AddEventHandler(informer.AsDirect(lh)) // observes, never blocks
	if err != nil {
		lh.Release()
		return err
	}
	i.keepLagHandler(reg, lh)
	i.lagListener = reg
	return nil
}

// keepLagHandler remembers reg's lag handler, for removeHandler to release.
func (i *nsInformer) keepLagHandler(reg toolscache.ResourceEventHandlerRegistration, lh *informerlag.Handler) {
	if i.lagHandlers == nil {
		i.lagHandlers = map[toolscache.ResourceEventHandlerRegistration]*informerlag.Handler{}
	}
	i.lagHandlers[reg] = lh
}
