package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/budget"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/internal/wallclock"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Errors a caller can test for with errors.Is.
var (
	// ErrNoSources: Start was called on a controller with no sources, which
	// would never reconcile anything.
	ErrNoSources = errors.New("controller has no sources")
	// ErrReconcileTimeout is the cause of a reconcile context that
	// Options.ReconcileTimeout ended.
	ErrReconcileTimeout = errors.New("reconcile timed out")
	// ErrShutdown is the cause of a reconcile context canceled because the
	// controller stopped and its drain timeout passed.
	ErrShutdown = errors.New("controller shut down")
	// ErrAbort, as the cause of Start's context (see
	// context.WithCancelCause), stops the controller without a drain: the
	// contexts of the reconciles in flight are canceled at once. A manager
	// that loses its leader lease stops its controllers so, since another
	// process may already be reconciling the same keys.
	ErrAbort = errors.New("controller aborted")
)

// Controller runs a Reconciler over the keys its sources put on its queue,
// with a pool of workers. Its methods are safe for concurrent use.
type Controller[K comparable] struct {
	name       string
	reconciler reconcile.Reconciler[K]
	opts       Options[K]
	queue      *queue.Queue[K]
	metrics    imetrics.Reconciles
	panics     *prometheus.CounterVec // handler panics, by controller and type
	writes     *pendingWrites[K]      // nil when read-your-writes is off
	lag        *eventLag              // nil without Options.Registerer and Options.TracerProvider
	tracer     *reconcileTracer[K]    // nil without Options.TracerProvider
	log        logr.Logger
	waiting    atomic.Int32    // workers holding a key at a closed leadership fence
	clock      wallclock.Clock // times reconciles and dates their starts

	mu      sync.Mutex
	sources []source.Source[K]
	started bool
}

// New returns a controller named name (it labels the controller's logs and
// metrics) that reconciles with r. Add sources with Watch, then Start it.
func New[K comparable](name string, r reconcile.Reconciler[K], opts Options[K]) (*Controller[K], error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("controller: New: name %q: use letters, digits, '-', '_' and '.', starting and ending with a letter or digit", name)
	}
	if r == nil {
		return nil, fmt.Errorf("controller %q: New: the Reconciler is nil", name)
	}
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("controller %q: invalid options: %w", name, err)
	}
	opts = opts.withDefaults()
	reg := opts.Registerer
	if reg == nil {
		// Reconcile metrics cost an atomic add each; keeping them in a
		// registry nobody reads is simpler than checking for none.
		reg = prometheus.NewRegistry()
	}
	cm, err := imetrics.NewControllerMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("controller %q: %w", name, err)
	}
	panics, err := imetrics.NewHandlerPanics(reg)
	if err != nil {
		return nil, fmt.Errorf("controller %q: %w", name, err)
	}
	var writes *pendingWrites[K]
	if opts.ReadYourWritesTimeout > 0 { // negative: off
		wait, err := imetrics.NewReadYourWritesWait(reg)
		if err != nil {
			return nil, fmt.Errorf("controller %q: %w", name, err)
		}
		writes = newPendingWrites[K](name, opts.ReadYourWritesTimeout, wait)
	}
	qopts := queue.Options[K]{Name: name, RateLimiter: opts.RateLimiter, Tenant: opts.Tenant, TenantGroup: opts.TenantGroup, Clock: opts.Clock}
	if opts.Registerer != nil {
		qm, err := metrics.NewQueueMetrics(opts.Registerer)
		if err != nil {
			return nil, fmt.Errorf("controller %q: %w", name, err)
		}
		qopts.Metrics = qm
	}
	lag, err := newEventLag(opts.Registerer, name, opts.TracerProvider != nil)
	if err != nil {
		return nil, fmt.Errorf("controller %q: %w", name, err)
	}
	return &Controller[K]{
		name:       name,
		reconciler: r,
		opts:       opts,
		queue:      queue.New(qopts),
		metrics:    cm.For(name, opts.MaxConcurrentReconciles+opts.SpareWorkers),
		panics:     panics,
		writes:     writes,
		lag:        lag,
		tracer:     newReconcileTracer[K](opts.TracerProvider, name),
		log:        opts.Logger.WithValues("controller", name),
	}, nil
}

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// Queue returns the controller's queue, for sources started by hand and for
// tests. Keys added to it are reconciled once the controller has started.
func (c *Controller[K]) Queue() *queue.Queue[K] { return c.queue }

// Watch adds a source, which Start starts. It must be called before Start.
func (c *Controller[K]) Watch(src source.Source[K]) error {
	if src == nil {
		return fmt.Errorf("controller %q: Watch: the source is nil", c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("controller %q: Watch after Start: add every source before the controller starts", c.name)
	}
	c.sources = append(c.sources, src)
	return nil
}

// Start starts the sources, waits for them to sync (at most
// Options.CacheSyncTimeout), then reconciles with
// Options.MaxConcurrentReconciles workers and Options.SpareWorkers spare
// workers until ctx ends. Then it stops
// handing out keys, waits up to Options.DrainTimeout for the reconciles in
// flight, and returns nil (at once, canceling the reconciles in flight, if
// the context's cause wraps ErrAbort); or an error if the drain timed out, a source
// failed to start or sync, or the controller has no sources or was started
// before. Keys still queued at the end are dropped: the sources queue them
// again after a restart.
func (c *Controller[K]) Start(ctx context.Context) error {
	sources, err := c.markStarted()
	if err != nil {
		return err
	}
	defer c.queue.ShutDown()
	srcCtx := source.WithPanicObserver(logr.NewContext(ctx, c.log), c.handlerPanicked)
	if c.lag != nil {
		srcCtx = source.WithLag(srcCtx, c.lag.sourceLag())
	}
	for _, src := range sources {
		if err := src.Start(srcCtx, c.queue); err != nil {
			return fmt.Errorf("controller %q: start source %s: %w", c.name, describe(src), err)
		}
	}
	if err := c.waitForSync(ctx, sources); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	c.log.Info("Starting workers", "workers", c.opts.MaxConcurrentReconciles, "spareWorkers", c.opts.SpareWorkers)
	return c.run(ctx)
}

func (c *Controller[K]) markStarted() ([]source.Source[K], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil, fmt.Errorf("controller %q: Start called twice", c.name)
	}
	if len(c.sources) == 0 {
		return nil, fmt.Errorf("controller %q: %w: add one with Watch before Start", c.name, ErrNoSources)
	}
	c.started = true
	return c.sources, nil
}

// waitForSync waits for every source that has an initial set of keys, and
// names each that has not delivered it by the timeout. It returns nil if
// ctx ends first: that is a stop, not a failure.
func (c *Controller[K]) waitForSync(ctx context.Context, sources []source.Source[K]) error {
	cause := fmt.Errorf("sources not synced within %v (Options.CacheSyncTimeout): %w", c.opts.CacheSyncTimeout, cache.ErrNotSynced)
	syncCtx, cancel := context.WithTimeoutCause(ctx, c.opts.CacheSyncTimeout, cause)
	defer cancel()
	var errs []error
	for _, src := range sources {
		if s, ok := src.(source.Syncing); ok {
			if err := s.WaitForSync(syncCtx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("controller %q: wait for sources to sync: %w", c.name, errors.Join(errs...))
}

// run reconciles until ctx ends, then drains.
func (c *Controller[K]) run(ctx context.Context) error {
	// Reconciles outlive ctx by up to the drain timeout, so that a stop
	// does not cut short the work in flight. Their requests spend the
	// controller's share of the API budget (package budget).
	workCtx, stopWork := context.WithCancelCause(budget.WithController(context.WithoutCancel(ctx), c.name))
	defer stopWork(ErrShutdown)
	b := budget.FromContext(ctx)
	var wg sync.WaitGroup
	work := func(spare bool) {
		w := c.newWorker(b, spare)
		for c.processNext(workCtx, ctx, w) {
		}
	}
	for range c.opts.MaxConcurrentReconciles {
		wg.Go(func() { work(false) })
	}
	// A spare serves only while every regular worker is busy. The queue's
	// drain waits for the spares' keys like any others.
	for range c.opts.SpareWorkers {
		wg.Go(func() { work(true) })
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); errors.Is(cause, ErrAbort) {
		c.log.Info("Aborting: canceling the reconciles in flight", "cause", cause.Error())
		stopWork(cause)
		c.queue.ShutDown()
		wg.Wait()
		return nil
	}
	c.log.Info("Stopping workers; waiting for reconciles in flight", "timeout", c.opts.DrainTimeout)
	drainCtx, cancel := context.WithTimeoutCause(context.Background(), c.opts.DrainTimeout,
		fmt.Errorf("controller %q: reconciles still running after Options.DrainTimeout (%v)", c.name, c.opts.DrainTimeout))
	defer cancel()
	if err := c.queue.ShutDownWithDrain(drainCtx); err != nil {
		// The workers end when their reconciles return; their contexts are
		// canceled on return.
		return fmt.Errorf("controller %q: drain: %w", c.name, err)
	}
	wg.Wait()
	c.log.Info("All workers finished")
	return nil
}

// handlerPanicked logs and counts a panic that a source recovered from a
// handler, map function or predicate, or crashes with it under
// Options.CrashOnPanic.
func (c *Controller[K]) handlerPanicked(p *source.HandlerPanic) {
	c.panics.WithLabelValues(c.name, p.Type).Inc()
	if c.opts.CrashOnPanic {
		panic(p.Value)
	}
	c.log.Error(p, "Event handler panicked; recovered, the event is dropped", "source", p.Source, "type", p.Type,
		"event", p.Event, "namespace", p.Namespace, "name", p.Name, "stack", string(p.Stack))
}

// describe names a source in errors.
func describe(src any) string {
	if s, ok := src.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", src)
}
