// Package informer is the informer behind pkg/cache: a client-go
// SharedIndexInformer in every method, with one difference in how it
// delivers. client-go hands each event to each handler through a
// processorListener, two goroutines and a growing buffer of its own, which
// costs every event two hand-offs between goroutines. This informer calls
// a handler that promises not to block (Direct) on the goroutine that
// stores the event, right after storing it; any other handler gets the
// buffer and goroutine client-go would give it, so that a slow handler
// delays only itself.
//
// A Direct handler that blocks holds back the store, and with it every
// reader and every other handler of the informer: that is the price of
// the hand-offs it saves. pkg/source's handlers, which only queue keys,
// are Direct.
//
// Its store behaves as client-go's (toolscache.NewIndexer with
// DeletionHandlingMetaNamespaceKeyFunc) in less memory: it holds objects by
// namespace, then name, so that it makes no key string per object and
// its namespace index is no set of keys (see store).
//
// With Options.Lag, the informer also dates each event by its object's
// change at the API server, read as the object is ingested, and carries
// the date with the object through its queue to the delivery, where it
// observes the event's lag and hands the date to TimedEventHandlers.
package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgofeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
)

// Direct is implemented by a handler that never blocks, to be called on
// the informer's delivery goroutine. It may call its informer's HasSynced
// and RemoveEventHandler; adding a handler to its own informer would wait
// for the delivery that runs it.
type Direct interface {
	toolscache.ResourceEventHandler
	// DeliverDirectly is a marker; it is never called.
	DeliverDirectly()
}

// ErrStopped is returned for a handler added to an informer that has
// stopped.
var ErrStopped = errors.New("the informer has stopped")

// Informer is a toolscache.SharedIndexInformer; see the package doc. Make
// it with New.
type Informer struct {
	indexer    *store
	controller toolscache.Controller
	lw         toolscache.ListerWatcher // as given to New
	fifo       *toolscache.RealFIFO
	lag        *Lag // nil without Options.Lag
	samples    sampler

	// delivering is held while an event is stored and delivered, and
	// while a handler added is handed the store's objects: so it sees
	// every later event, once.
	delivering sync.Mutex
	// reading, under delivering, is a reading of the clock taken since the
	// last event was delivered, with Lag: the next event's delivery time.
	// Zero when there is none: before each batch of events, and after an
	// event no handler returned a reading for.
	reading time.Time
	// handlers are read under delivering, and replaced (never modified)
	// under mu, which no handler's code runs under.
	handlers atomic.Pointer[[]*Registration]

	// mu guards the fields below, and replacing handlers.
	mu        sync.Mutex
	transform toolscache.TransformFunc
	watchErr  toolscache.WatchErrorHandlerWithContext
	shard     apisharding.Selector
	// sharded is lw with shard applied, made at the first list or watch.
	sharded toolscache.ListerWatcherWithContext
	// firstList answers the first list, if set (SetFirstList).
	firstList ListFunc
	started   bool
	stopped   bool
}

var _ toolscache.SharedIndexInformer = (*Informer)(nil)

// Options configure New.
type Options struct {
	// ResyncPeriod, Indexers and ObjectDescription are as client-go's.
	// Handlers are resynced every ResyncPeriod, if not 0. New reads no
	// other field: client-go v0.38's ShardSelector is ignored (the code
	// must compile against v0.37, which lacks it); call SetShardSelector.
	toolscache.SharedIndexInformerOptions
	// Lag, if set, has the informer date its events and observe their
	// lag (see Lag).
	Lag *Lag
	// CompactMetadata, if set, has the store hold the
	// *metav1.PartialObjectMetadata objects it is given packed, in a
	// fraction of the memory: each read of one (from the indexer, and
	// the old object of an update handed to handlers) is then a new
	// object, DeepEqual to the one stored, whose maps, slices and
	// pointers are the stored object's. The objects handed to handlers
	// as new are those the queue gave, as without it.
	CompactMetadata bool
}

// New returns an informer of the objects lw lists and watches, like
// toolscache.NewSharedIndexInformerWithOptions.
func New(lw toolscache.ListerWatcher, example runtime.Object, o Options) *Informer {
	opts := o.SharedIndexInformerOptions
	i := &Informer{
		indexer: newStore(opts.Indexers),
		lw:      lw,
		lag:     newLag(o.Lag),
	}
	if o.CompactMetadata {
		i.indexer.packer = &packer{}
	}
	description := opts.ObjectDescription
	if description == "" {
		description = fmt.Sprintf("%T", example)
	}
	// The queue client-go's informers use, as they configure it.
	fifo := toolscache.RealFIFOOptions{
		Name:        "RealFIFO " + description,
		KeyFunction: storeKey,
		Transformer: i.transformObject,
	}
	if clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		// A relist is one ReplacedAll, a resync one SyncAll. The queue
		// keys objects only to check them and to batch distinct ones,
		// so the object's UID serves, which it holds already, where
		// namespace/name would be a new string every time.
		fifo.KeyFunction = fifoKey
		fifo.AtomicEvents = true
		fifo.UnlockWhileProcessing = clientgofeatures.FeatureGates().Enabled(clientgofeatures.UnlockWhileProcessingFIFO)
		fifo.EmitDeltaTypeBookmark = true
	} else {
		// A relist is a delete for each object gone and a replace for
		// each listed, a resync a sync for each object held.
		fifo.KnownObjects = i.indexer
	}
	i.fifo = toolscache.NewRealFIFOWithOptions(fifo)
	i.controller = toolscache.New(&toolscache.Config{
		Queue:             i.fifo,
		ListerWatcher:     runListWatch{i},
		ObjectType:        example,
		ObjectDescription: description,
		FullResyncPeriod:  opts.ResyncPeriod,
		Process: func(obj any, isInInitialList bool) error {
			deltas, ok := obj.(toolscache.Deltas)
			if !ok {
				return fmt.Errorf("informer: process %T, not Deltas", obj)
			}
			return i.process(deltas, isInInitialList)
		},
		ProcessBatch:                 i.process,
		WatchErrorHandlerWithContext: i.watchError,
	})
	return i
}

// fifoKey is an object's UID, or its namespace/name if it has none.
func fifoKey(obj any) (string, error) {
	obj, _, _ = unwrap(obj)
	if o, ok := obj.(metav1.Object); ok {
		if uid := o.GetUID(); uid != "" {
			return string(uid), nil
		}
	}
	return toolscache.MetaNamespaceKeyFunc(obj)
}

// storeKey is an object's key in the store, namespace/name.
func storeKey(obj any) (string, error) {
	obj, _, _ = unwrap(obj)
	return toolscache.MetaNamespaceKeyFunc(obj)
}

// transformObject is the queue's transform: the informer's, and with Lag,
// the object's stamp, read before it. A streaming list's reflector
// applies it twice, in a store of its own and again as it hands the list
// to the queue: an object stamped already has been transformed.
func (i *Informer) transformObject(obj any) (any, error) {
	if _, ok := obj.(*stamped); ok {
		return obj, nil
	}
	timed := i.lag != nil && i.samples.take()
	var st stamp
	if timed {
		st = changeTimes(obj)
	}
	if i.transform != nil { // set only before Run
		var err error
		if obj, err = i.transform(obj); err != nil {
			return obj, err
		}
	}
	if timed {
		return &stamped{obj: obj, stamp: st}, nil
	}
	return obj, nil
}

func (i *Informer) watchError(ctx context.Context, r *toolscache.Reflector, err error) {
	if i.watchErr == nil { // set only before Run
		// A list or watch that fails as the informer stops was ended on
		// purpose: client-go's handler would log it as an error.
		if !errors.Is(ctx.Err(), context.Canceled) {
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		}
		return
	}
	i.watchErr(ctx, r, err)
}

// process stores deltas, oldest first, and hands each to the handlers.
func (i *Informer) process(deltas []toolscache.Delta, isInInitialList bool) error {
	i.delivering.Lock()
	defer i.delivering.Unlock()
	i.reading = time.Time{} // the queue may have waited for this batch
	var errs []error
	for _, d := range deltas {
		if err := i.store(d, isInInitialList); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// store applies d to the store and delivers it. The caller holds
// delivering.
func (i *Informer) store(d toolscache.Delta, isInInitialList bool) error {
	switch d.Type {
	case toolscache.Sync, toolscache.Replaced, toolscache.Added, toolscache.Updated:
		obj, st, timed := unwrap(d.Object)
		i.dateDelivery(timed)
		old, ok, err := i.indexer.swap(obj)
		if err != nil {
			return err
		}
		if ok {
			i.deliver(&event{kind: 'u', obj: obj, old: old, untimed: !timed}, st)
			return nil
		}
		i.deliver(&event{kind: 'a', obj: obj, isInInitialList: isInInitialList, untimed: !timed}, st)
	case toolscache.Deleted:
		obj, st, timed := unwrap(d.Object)
		if _, tomb := obj.(toolscache.DeletedFinalStateUnknown); tomb {
			timed = i.take()
		}
		i.dateDelivery(timed)
		if err := i.indexer.Delete(obj); err != nil {
			return err
		}
		i.deliver(&event{kind: 'd', obj: obj, untimed: !timed}, st)
	case toolscache.ReplacedAll:
		info, ok := d.Object.(toolscache.ReplacedAllInfo)
		if !ok {
			return fmt.Errorf("informer: ReplacedAll delta holds %T", d.Object)
		}
		return i.replaceAll(info, isInInitialList)
	case toolscache.SyncAll:
		for _, obj := range i.indexer.List() {
			i.deliver(&event{kind: 'u', obj: obj, old: obj, untimed: !i.take()}, stamp{})
		}
	case toolscache.Bookmark:
		if info, ok := d.Object.(toolscache.BookmarkInfo); ok {
			i.indexer.Bookmark(info.ResourceVersion)
		}
	}
	return nil
}

// deliver dates e from st and observes its lag, with Lag if e is timed,
// and hands it to every handler. The caller holds delivering.
func (i *Informer) deliver(e *event, st stamp) {
	if i.lag == nil || e.untimed {
		if i.lag != nil {
			i.samples.delivered(time.Time{})
			i.reading = time.Time{} // the handlers take time, untimed
		}
		for _, h := range i.registrations() {
			i.lag.deliver(e, h.handler, h.timed)
		}
		return
	}
	e.date(st)
	e.stamped = i.now()
	i.samples.delivered(e.stamped)
	i.lag.observe(e)
	i.reading = time.Time{}
	for _, h := range i.registrations() {
		i.reading = i.lag.deliver(e, h.handler, h.timed)
	}
}

// take reports whether an event that was not ingested (a resync's, or a
// relist's inferred delete) is timed: with Lag, as the sampler picks.
func (i *Informer) take() bool {
	return i.lag != nil && i.samples.take()
}

// dateDelivery reads the delivery time of a timed event, with Lag, before
// it is stored, unless the handlers of the event before it returned one.
// The caller holds delivering.
func (i *Informer) dateDelivery(timed bool) {
	if timed {
		i.now()
	}
}

// now returns reading, with Lag, reading the clock if it is zero. The
// caller holds delivering.
func (i *Informer) now() time.Time {
	if i.lag != nil && i.reading.IsZero() {
		i.reading = i.lag.Now()
	}
	return i.reading
}

// AddEventHandler adds h: an add for every object the store holds, with
// isInInitialList true, then every event. A Direct h is called on the
// delivery goroutine (and, for the store's objects, on the caller's),
// any other on a goroutine of its own.
func (i *Informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.delivering.Lock()
	defer i.delivering.Unlock()
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return nil, fmt.Errorf("informer: add event handler %T: %w", h, ErrStopped)
	}
	r := &Registration{informer: i}
	if _, ok := h.(Direct); ok {
		r.handler = h
		if i.lag != nil {
			r.timed, _ = h.(TimedEventHandler)
		}
	} else {
		r.buffer = newBuffer(h, i.lag, i.controller.HasSyncedChecker())
		r.handler, r.timed = r.buffer, r.buffer
	}
	i.mu.Unlock()
	for _, obj := range i.indexer.List() {
		i.lag.deliver(&event{kind: 'a', obj: obj, isInInitialList: true}, r.handler, r.timed)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers.Store(ptr(append(slices.Clone(i.registrations()), r)))
	if r.buffer != nil {
		switch {
		case i.stopped:
			r.buffer.stop()
		case i.started: // else Run starts it
			go r.buffer.run()
		}
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

// registrations returns the handlers.
func (i *Informer) registrations() []*Registration {
	if p := i.handlers.Load(); p != nil {
		return *p
	}
	return nil
}

// AddEventHandlerWithResyncPeriod is AddEventHandler: the handler is
// resynced at the informer's period.
func (i *Informer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// AddEventHandlerWithOptions is AddEventHandler: the handler is resynced
// at the informer's period, and a buffered one's panics are reported as
// client-go reports them.
func (i *Informer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// RemoveEventHandler stops events reaching a handler; a buffered one is
// handed no more of its buffer. Removing it twice is no error.
func (i *Informer) RemoveEventHandler(reg toolscache.ResourceEventHandlerRegistration) error {
	r, ok := reg.(*Registration)
	if !ok || r.informer != i {
		return fmt.Errorf("informer: remove event handler: %T is not a registration of this informer", reg)
	}
	// Not under delivering: an event being delivered may still reach
	// the handler, as with client-go, but its removal waits for nothing.
	i.mu.Lock()
	defer i.mu.Unlock()
	hs := i.registrations()
	if j := slices.Index(hs, r); j >= 0 {
		i.handlers.Store(ptr(slices.Delete(slices.Clone(hs), j, j+1)))
		if r.buffer != nil {
			r.buffer.stop()
		}
	}
	return nil
}

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) { i.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext lists and watches, stores and delivers, until ctx ends.
// An informer runs once.
func (i *Informer) RunWithContext(ctx context.Context) {
	i.mu.Lock()
	if i.started {
		i.mu.Unlock()
		return
	}
	i.started = true
	for _, r := range i.registrations() {
		if r.buffer != nil {
			go r.buffer.run()
		}
	}
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		defer i.mu.Unlock()
		i.stopped = true
		for _, r := range i.registrations() {
			if r.buffer != nil {
				r.buffer.stop()
			}
		}
	}()
	i.controller.RunWithContext(ctx)
}

// GetStore returns the informer's store, its indexer.
func (i *Informer) GetStore() toolscache.Store { return i.indexer }

// GetIndexer returns the informer's indexer.
func (i *Informer) GetIndexer() toolscache.Indexer { return i.indexer }

// GetController returns the informer's controller. Run the informer, not
// the controller.
func (i *Informer) GetController() toolscache.Controller { return i.controller }

// HasSynced reports whether the informer has stored and delivered its
// initial list. It takes no lock, so a handler may call it.
func (i *Informer) HasSynced() bool { return toolscache.IsDone(i.controller.HasSyncedChecker()) }

// HasSyncedChecker is HasSynced as a channel.
func (i *Informer) HasSyncedChecker() toolscache.DoneChecker { return i.controller.HasSyncedChecker() }

// LastSyncResourceVersion is the resource version of the latest list or
// watch event.
func (i *Informer) LastSyncResourceVersion() string { return i.controller.LastSyncResourceVersion() }

// SetWatchErrorHandler sets the handler of list and watch errors; before
// Run only.
func (i *Informer) SetWatchErrorHandler(h toolscache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) { h(r, err) })
}

// SetWatchErrorHandlerWithContext sets the handler of list and watch
// errors; before Run only.
func (i *Informer) SetWatchErrorHandlerWithContext(h toolscache.WatchErrorHandlerWithContext) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("informer: set watch error handler: the informer has started")
	}
	i.watchErr = h
	return nil
}

// SetTransform sets the function applied to every object before it is
// stored; before Run only.
func (i *Informer) SetTransform(t toolscache.TransformFunc) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("informer: set transform: the informer has started")
	}
	i.transform = t
	return nil
}

// IsStopped reports whether the informer has stopped.
func (i *Informer) IsStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// AddIndexers adds indexers to the store, indexing the objects it holds.
func (i *Informer) AddIndexers(indexers toolscache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return fmt.Errorf("informer: add indexers: %w", ErrStopped)
	}
	return i.indexer.AddIndexers(indexers)
}

// Registration is a handler added to an Informer.
type Registration struct {
	informer *Informer
	handler  toolscache.ResourceEventHandler // what the informer calls
	timed    TimedEventHandler               // handler, if timed and the informer has Lag
	buffer   *buffer                         // nil for a Direct handler
}

// HasSynced reports whether the handler has been handed every object of
// the informer's initial list.
func (r *Registration) HasSynced() bool {
	if r.buffer != nil {
		return r.buffer.hasSynced()
	}
	return r.informer.HasSynced()
}

// HasSyncedChecker is HasSynced as a channel.
func (r *Registration) HasSyncedChecker() toolscache.DoneChecker {
	if r.buffer != nil {
		return r.buffer
	}
	return r.informer.HasSyncedChecker()
}

// Wrap returns wrapper, which hands wrapped its events, as a Direct
// handler if wrapped is one. wrapper keeps its own TimedEventHandler
// methods, if it has them.
func Wrap(wrapper, wrapped toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	if _, ok := wrapped.(Direct); ok {
		return AsDirect(wrapper)
	}
	return wrapper
}

// AsDirect returns h as a Direct handler, and a TimedEventHandler if h is
// one: h must never block.
func AsDirect(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	if t, ok := h.(TimedEventHandler); ok {
		return directTimed{h, t}
	}
	return direct{h}
}

type direct struct {
	toolscache.ResourceEventHandler
}

func (direct) DeliverDirectly() {}

type directTimed struct {
	toolscache.ResourceEventHandler
	TimedEventHandler
}

func (directTimed) DeliverDirectly() {}
