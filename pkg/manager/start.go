package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/pkg/controller"
)

// Start runs the manager until ctx ends or a runnable fails: it checks that
// the API server answers, failing at once with an error that wraps
// ErrUnreachable and names its address if it does not, serves metrics,
// probes and webhooks, starts the cache and waits for it to sync (at most
// Options.CacheSyncTimeout), starts the runnables that need no lease, and,
// once elected (at once without leader election), the leader-only ones.
//
// When ctx ends it stops gracefully, within Options.ShutdownTimeout in all:
// runnables stop (controllers let their reconciles in flight finish), the
// lease is released if Options.LeaderElection.ReleaseOnCancel, then the
// cache and servers stop; Start returns nil. It returns the first error of
// a runnable, the cache's sync or the servers otherwise, and an error
// wrapping ErrLeaderLost, at once, if the lease is lost: leader-only work
// is then canceled without waiting, since another process may hold the
// lease already. Start may be called once.
func (m *Manager) Start(ctx context.Context) error {
	runnables, err := m.markStarted()
	if err != nil {
		return err
	}
	if err := m.reachable(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it began
		}
		return err
	}
	if err := m.checkWebhookCertificate(); err != nil {
		return err
	}
	servers, err := m.listen()
	if err != nil {
		return err
	}
	m.setServers(servers)
	for _, s := range servers {
		// The bound address: with port 0 in the options, only the log
		// says where to connect.
		m.log.Info("Serving", "server", s.name, "address", s.Addr().String())
	}
	r := newRun(ctx, m)
	for _, s := range servers {
		go s.serve(r.fail)
	}
	r.serveWebhook()
	r.run(runnables)
	<-r.ctx.Done()
	return r.shutdown(servers)
}

// reachTimeout bounds how long Start waits for the API server to answer
// before it gives up.
const reachTimeout = 10 * time.Second

// reachable fails, naming the address, if the API server does not answer
// at all: the cache would otherwise wait out Options.CacheSyncTimeout
// before saying so. An answer that is an error (such as 403) is an answer:
// what the manager may not do is the cache's and the controllers' to
// report, per type.
func (m *Manager) reachable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	err := m.clientset.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		return nil
	}
	return fmt.Errorf("manager: the API server at %s does not answer (is it running, and is this the kubeconfig you meant?): %w: %w",
		m.config.Host, ErrUnreachable, err)
}

func (m *Manager) markStarted() ([]Runnable, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return nil, errors.New("manager: Start called twice")
	}
	m.started = true
	return m.runnables, nil
}

// run is the state of one Start.
type run struct {
	m      *Manager
	parent context.Context
	ctx    context.Context // ends at stop or at the first failure
	stop   context.CancelCauseFunc

	errOnce sync.Once
	err     error // the first failure

	// Runnables and the cache get contexts of their own, detached from
	// ctx, so that shutdown stops them in order.
	workCtx    context.Context
	stopWork   context.CancelCauseFunc
	leaderCtx  context.Context
	stopLeader context.CancelCauseFunc
	cacheCtx   context.Context
	stopCache  context.CancelFunc
	electCtx   context.Context
	stopElect  context.CancelFunc
	elector    chan struct{} // closed when the election loop has ended; nil without one
	// The shard member runs from after the cache synced until it has left
	// the group, which shutdown waits for before it stops the runnables.
	memberCtx  context.Context
	stopMember context.CancelFunc
	member     chan struct{} // closed when the member has left; nil without one
	// stopWebhook stops the webhook server and waits for it; nil without
	// one.
	stopWebhook func(context.Context) error

	mu       sync.Mutex
	stopping bool // set by shutdown: no runnable starts after it
	work     sync.WaitGroup
}

func newRun(parent context.Context, m *Manager) *run {
	r := &run{m: m, parent: parent}
	r.ctx, r.stop = context.WithCancelCause(parent)
	detached := context.WithoutCancel(parent)
	r.workCtx, r.stopWork = context.WithCancelCause(detached)
	r.leaderCtx, r.stopLeader = context.WithCancelCause(detached)
	if m.fence != nil {
		// Leader-only work carries the fence: its writes are refused,
		// and its controllers start no reconcile, while the process is
		// not sure it still holds the lease.
		r.leaderCtx = fence.NewContext(r.leaderCtx, m.fence)
	}
	r.cacheCtx, r.stopCache = context.WithCancel(detached)
	r.electCtx, r.stopElect = context.WithCancel(detached)
	r.memberCtx, r.stopMember = context.WithCancel(detached)
	return r
}

// fail records the first failure and stops the run.
func (r *run) fail(err error) {
	r.errOnce.Do(func() {
		r.err = err
		r.stop(err)
	})
}

// run starts the event recorder, the cache and the runnables, in order.
func (r *run) run(runnables []Runnable) {
	m := r.m
	if err := m.broadcast.StartRecordingToSinkWithContext(r.cacheCtx); err != nil {
		r.fail(fmt.Errorf("manager: start the event recorder: %w", err))
		return
	}
	if err := m.cache.Start(r.cacheCtx); err != nil {
		r.fail(fmt.Errorf("manager: start the cache: %w", err))
		return
	}
	m.log.Info("Waiting for the cache to sync", "timeout", m.opts.CacheSyncTimeout)
	syncCtx, cancel := context.WithTimeoutCause(r.ctx, m.opts.CacheSyncTimeout,
		fmt.Errorf("cache not synced within %v (Options.CacheSyncTimeout)", m.opts.CacheSyncTimeout))
	defer cancel()
	if err := m.cache.WaitForSync(syncCtx); err != nil {
		if r.ctx.Err() == nil {
			r.fail(fmt.Errorf("manager: %w", err))
		}
		return
	}
	m.synced.Store(true)
	m.log.Info("Cache synced")
	var leaderOnly []Runnable
	for _, rn := range runnables {
		if needsLeader(rn) {
			leaderOnly = append(leaderOnly, rn)
			continue
		}
		r.start(r.workCtx, rn)
	}
	r.join()
	if !m.opts.LeaderElection.Enabled {
		r.lead(leaderOnly)
		return
	}
	if err := r.elect(leaderOnly); err != nil {
		r.fail(err)
	}
}

// join runs the shard member, in sharded mode, once the cache has synced:
// a slot's keys are queued from the cache when the slot is gained.
func (r *run) join() {
	if r.m.shard == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return
	}
	r.member = make(chan struct{})
	go func() {
		defer close(r.member)
		r.m.shard.run(r.memberCtx, r.m)
	}()
}

// leave ends the shard member and waits until it has left: its slots'
// reconciles have returned and its Lease is deleted, so the other replicas
// take its slots at their next round, before this one's controllers stop.
func (r *run) leave(ctx context.Context) error {
	r.stopMember()
	r.mu.Lock()
	member := r.member
	r.mu.Unlock()
	if member == nil {
		return nil
	}
	select {
	case <-member:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shard member still leaving: %w", context.Cause(ctx))
	}
}

// lead starts the leader-only runnables.
func (r *run) lead(runnables []Runnable) {
	close(r.m.elected)
	for _, rn := range runnables {
		r.start(r.leaderCtx, rn)
	}
}

func (r *run) start(ctx context.Context, rn Runnable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return
	}
	r.work.Go(func() {
		if err := rn.Start(ctx); err != nil {
			r.fail(fmt.Errorf("manager: runnable %s: %w", named(rn), err))
		}
	})
}

// shutdown stops everything in order within Options.ShutdownTimeout and
// returns the first failure, if any.
func (r *run) shutdown(servers []*server) error {
	m := r.m
	timeout := m.opts.ShutdownTimeout
	m.log.Info("Stopping", "timeout", timeout)
	ctx, cancel := context.WithTimeoutCause(context.Background(), timeout,
		fmt.Errorf("manager: shutdown took longer than Options.ShutdownTimeout (%v)", timeout))
	defer cancel()

	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	leaveErr := r.leave(ctx)
	cause := context.Cause(r.ctx)
	if errors.Is(cause, ErrLeaderLost) {
		r.stopLeader(fmt.Errorf("%w: %w", controller.ErrAbort, cause))
	} else {
		r.stopLeader(nil)
	}
	r.stopWork(nil)
	// A runnable that fails while stopping did not cause the stop: closing
	// the Once keeps such failures out of r.err, and orders this read
	// after any write of it.
	r.errOnce.Do(func() {})
	errs := []error{r.err, leaveErr}
	if !waitGroup(ctx, &r.work) {
		errs = append(errs, fmt.Errorf("runnables still running: %w", context.Cause(ctx)))
	}
	// The lease is released (if asked) only once leader-only work has
	// stopped, so that two processes never reconcile at once.
	r.stopElect()
	if r.elector != nil {
		select {
		case <-r.elector:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("leader election still running: %w", context.Cause(ctx)))
		}
	}
	r.stopCache()
	m.broadcast.Shutdown()
	for _, s := range servers {
		errs = append(errs, s.shutdown(ctx))
	}
	if r.stopWebhook != nil {
		errs = append(errs, r.stopWebhook(ctx))
	}
	err := errors.Join(errs...)
	if err == nil {
		m.log.Info("Stopped")
	}
	return err
}

// waitGroup waits for wg, or for ctx to end; it reports whether wg is done.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
