package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Removal says what RemoveController does with the keys a controller has
// queued.
type Removal uint8

const (
	// Drop stops the controller at once: its sources stop, the keys it
	// has queued are dropped, and the reconciles in flight finish (within
	// its controller.Options.DrainTimeout), as when the manager stops.
	Drop Removal = iota
	// Drain reconciles the keys that are queued and ready (not those
	// waiting out a RequeueAfter or a backoff), and those its sources
	// queue meanwhile, until none is ready or RemoveController's context
	// ends; then it stops as Drop does. A controller that has not started
	// (this replica is not the leader) has nothing to drain.
	Drain
)

// drainPoll is how often Drain looks whether the queue has emptied: the
// queue has no signal for it, and a drain is rare.
const drainPoll = 20 * time.Millisecond

// managedController is a controller NewController built: it runs in a
// context of its own, which RemoveController ends, and knows what to undo
// when removed.
type managedController struct {
	name   string
	ctl    *controller.Controller[reconcile.Request]
	leader bool // runs only on the leader (not in sharded mode)
	// series are the metric collectors the controller registered its
	// series with; release drops the cache holds its watches took, and
	// detach takes its gate off the shard dispatcher (nil without
	// sharding).
	series  *series
	release []func()
	detach  func()
	// cleaned makes cleanUp run once, however many RemoveControllers
	// race: a second must not delete a successor's series or name.
	cleaned sync.Once

	mu      sync.Mutex
	started bool // Start has begun; done is closed when it returns
	removed bool // RemoveController was called: Start, if not begun, never runs it
	cancel  context.CancelCauseFunc
	err     error // Start's error, after removal
	done    chan struct{}
}

var (
	_ Runnable               = (*managedController)(nil)
	_ LeaderElectionRunnable = (*managedController)(nil)
)

// Start runs the controller until ctx ends or RemoveController stops it.
// An error of a controller being removed is RemoveController's to return,
// not the manager's to stop for.
func (mc *managedController) Start(ctx context.Context) error {
	mc.mu.Lock()
	if mc.removed || mc.started {
		mc.mu.Unlock()
		return nil
	}
	mc.started = true
	ctx, mc.cancel = context.WithCancelCause(ctx)
	cancel := mc.cancel
	mc.mu.Unlock()
	defer close(mc.done)
	defer cancel(nil)
	err := mc.ctl.Start(ctx)
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.removed {
		mc.err = err
		return nil
	}
	return err
}

// NeedLeaderElection implements LeaderElectionRunnable.
func (mc *managedController) NeedLeaderElection() bool { return mc.leader }

// Name names the controller in errors and logs.
func (mc *managedController) Name() string { return mc.name }

// stop marks the controller removed and ends its context (gracefully with
// a nil cause), and reports whether it had started: if not, it never will.
func (mc *managedController) stop(cause error) (started bool) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.removed = true
	if mc.cancel != nil {
		mc.cancel(cause)
	}
	return mc.started
}

func (mc *managedController) hasStarted() bool {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.started
}

// drain waits until the controller's queue holds no ready key, or ctx ends.
func (mc *managedController) drain(ctx context.Context) {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for mc.ctl.Queue().Len() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RemoveController stops the controller named name that NewController
// added, dropping or draining its queue as how says, and waits, within
// ctx, until it has stopped: its sources and workers have returned. Then
// it releases the cache holds its watches took (a type no other owner
// holds stops being cached; a Lister you passed to For, Owns or Watches
// stays yours), takes the controller off the shard dispatcher in sharded
// mode, and deletes its metric series (those labelled with its name:
// reconcile, workqueue, event lag, handler panics, dispatch); the series
// of its Writer stay, for the Writer is yours. The name may then be used
// again.
//
// If ctx ends first, RemoveController returns an error wrapping its
// cause; the controller still stops, and is cleaned up once it has, but
// its name stays taken until then. It returns the error the controller's
// Start returned while stopping (a drain that outlasted the controller's
// DrainTimeout, say), and an error if no controller of that name exists.
// It works before, during and after Start; a controller removed before it
// started never starts.
func (m *Manager) RemoveController(ctx context.Context, name string, how Removal) error {
	m.mu.Lock()
	mc := m.controllers[name]
	m.mu.Unlock()
	if mc == nil {
		return fmt.Errorf("manager: remove controller %q: no such controller (have %v)", name, m.controllerNames())
	}
	if how == Drain && mc.hasStarted() {
		mc.drain(ctx)
	}
	if !mc.stop(nil) {
		m.cleanUp(mc)
		return nil
	}
	select {
	case <-mc.done:
	case <-ctx.Done():
		go func() {
			<-mc.done
			m.cleanUp(mc)
		}()
		return fmt.Errorf("manager: remove controller %q: still stopping; it is cleaned up once it returns: %w", name, context.Cause(ctx))
	}
	m.cleanUp(mc)
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.err != nil {
		return fmt.Errorf("manager: remove controller %q: %w", name, mc.err)
	}
	return nil
}

// cleanUp undoes what NewController did for mc, which has stopped or will
// never start, and frees its name.
func (m *Manager) cleanUp(mc *managedController) {
	mc.cleaned.Do(func() {
		// A controller that never started still has its queue's goroutines.
		mc.ctl.Queue().ShutDown()
		if mc.detach != nil {
			mc.detach()
		}
		for _, release := range mc.release {
			release()
		}
		mc.series.forget(mc.name)
		m.unweigh(mc.name)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.runnables = slices.DeleteFunc(m.runnables, func(rn Runnable) bool { return rn == mc })
		if m.controllers[mc.name] == mc {
			delete(m.controllers, mc.name)
		}
	})
}

func (m *Manager) controllerNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for n, mc := range m.controllers {
		if mc != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// reserve takes name for a controller being built, so that two calls of
// NewController with one name do not both build.
func (m *Manager) reserve(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.controllers[name]; ok {
		return fmt.Errorf("manager: controller %q exists (or is still being removed): each controller needs a name of its own; remove the first with RemoveController to reuse it", name)
	}
	if m.controllers == nil {
		m.controllers = map[string]*managedController{}
	}
	m.controllers[name] = nil
	return nil
}

// unreserve frees name after a NewController that failed.
func (m *Manager) unreserve(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.controllers, name)
}

// addController adds mc, whose name is reserved: Start starts it, or, on
// a manager whose runnables run already, it starts at once (leader-only,
// once elected).
func (m *Manager) addController(mc *managedController) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.controllers[mc.name] = mc
	if m.launch != nil {
		m.launch(mc)
		return
	}
	m.runnables = append(m.runnables, mc)
}

// series is a Registerer that remembers the collectors a controller
// registered (or shared, registered first by another), so that its series
// can be deleted when it is removed.
type series struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

var _ prometheus.Registerer = (*series)(nil)

// Register implements prometheus.Registerer.
func (s *series) Register(c prometheus.Collector) error {
	err := s.Registerer.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		c = are.ExistingCollector
	} else if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collectors = append(s.collectors, c)
	return err
}

// MustRegister implements prometheus.Registerer.
func (s *series) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			panic(err)
		}
	}
}

// forget deletes the series of the controller named name from every
// collector it registered: those whose controller label is name, and the
// workqueue metrics', whose name label is.
func (s *series) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collectors {
		if v, ok := c.(interface{ DeletePartialMatch(prometheus.Labels) int }); ok {
			v.DeletePartialMatch(prometheus.Labels{"controller": name})
			v.DeletePartialMatch(prometheus.Labels{"name": name})
		}
	}
}
