package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/internal/memguard"
	"github.com/opkit-dev/opkit/pkg/controller"
)

// Start runs the manager until ctx ends or a runnable fails: it sets the Go
// memory limit from the container's (see MemoryLimitOptions), checks that
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
// a runnable, the cache's sync or the servers otherwise. A lost lease is
// ridden out (see ErrLeaderLost); with LeaderElectionOptions.ExitOnLoss,
// Start returns an error wrapping ErrLeaderLost at once instead, and
// leader-only work is canceled without waiting, since another process may
// hold the lease already. Start may be called once.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.markStarted(); err != nil {
		return err
	}
	guard := m.setMemoryLimit()
	m.guard = guard
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
	return m.run(ctx, servers, guard)
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

func (m *Manager) markStarted() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("manager: Start called twice")
	}
	m.started = true
	return nil
}

// run serves, runs the cache and the runnables until ctx ends or one of
// them fails, then stops them all in order within
// Options.ShutdownTimeout. It returns the first failure joined with what
// did not stop in time.
func (m *Manager) run(ctx context.Context, servers []*server, guard *memguard.Guard) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	fail, closeFailures := firstFailure(stop)
	stopGuard := runGuard(ctx, guard, fail)
	stopServers := m.serve(ctx, servers, fail)
	stopWork := m.work(ctx, fail)
	<-ctx.Done()

	timeout := m.opts.ShutdownTimeout
	m.log.Info("Stopping", "timeout", timeout)
	shutdown, cancel := context.WithTimeoutCause(context.Background(), timeout,
		fmt.Errorf("manager: shutdown took longer than Options.ShutdownTimeout (%v)", timeout))
	defer cancel()
	workErr := stopWork(shutdown, context.Cause(ctx), closeFailures)
	err := errors.Join(workErr, stopServers(shutdown), stopGuard(shutdown))
	if err == nil {
		m.log.Info("Stopped")
	}
	return err
}

// firstFailure returns fail, which records the first error it is given and
// stops the run with it, and closeFailures, which ends the record and
// returns that error, if any.
func firstFailure(stop context.CancelCauseFunc) (fail func(error), closeFailures func() error) {
	var once sync.Once
	var first error
	fail = func(err error) {
		once.Do(func() {
			first = err
			stop(err)
		})
	}
	closeFailures = func() error {
		// Also orders this read after any write of first.
		once.Do(func() {})
		return first
	}
	return fail, closeFailures
}

// stopFunc stops something the run started and waits until it has
// stopped, or until ctx (the shutdown's) ends.
type stopFunc func(ctx context.Context) error

func noStop(context.Context) error { return nil }

// goStop runs f in a goroutine and returns its stopFunc, which calls
// cancel (which must end f) and waits for f to return; if ctx ends first,
// its error starts with what.
func goStop(cancel context.CancelFunc, what string, f func()) stopFunc {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func(ctx context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		}
	}
}

// workStop stops the cache, the runnables, the shard member and the
// election, given the cause of the stop. It calls closeFailures as soon
// as the runnables are told to stop: a runnable that fails then did not
// cause the stop. It returns closeFailures' error joined with its own.
type workStop func(ctx context.Context, cause error, closeFailures func() error) error

// work starts the event recorder and the cache, waits for the cache to
// sync, then starts the runnables, in order; a step that fails fails the
// run, and no step after it starts.
func (m *Manager) work(ctx context.Context, fail func(error)) workStop {
	stopCache, synced := m.startCache(ctx, fail)
	stopRunnables := workStop(func(_ context.Context, _ error, closeFailures func() error) error {
		return closeFailures()
	})
	if synced {
		// Detached from ctx, so that the stop ends each part in its turn.
		stopRunnables = m.startRunnables(context.WithoutCancel(ctx), fail)
	}
	return func(ctx context.Context, cause error, closeFailures func() error) error {
		err := stopRunnables(ctx, cause, closeFailures)
		stopCache()
		return err
	}
}

// startCache starts the event recorder and the cache, and waits for the
// cache to sync; it reports whether it did. They run, detached from ctx,
// until stop.
func (m *Manager) startCache(ctx context.Context, fail func(error)) (stop func(), synced bool) {
	cacheCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop = func() {
		cancel()
		m.broadcast.Shutdown()
	}
	if err := m.broadcast.StartRecordingToSinkWithContext(cacheCtx); err != nil {
		fail(fmt.Errorf("manager: start the event recorder: %w", err))
		return stop, false
	}
	if err := m.cache.Start(cacheCtx); err != nil {
		fail(fmt.Errorf("manager: start the cache: %w", err))
		return stop, false
	}
	return stop, m.waitForSync(ctx, fail)
}

// waitForSync waits at most Options.CacheSyncTimeout for the cache to
// sync, and reports whether it did; it fails the run if not, unless ctx
// ended first.
func (m *Manager) waitForSync(ctx context.Context, fail func(error)) bool {
	m.log.Info("Waiting for the cache to sync", "timeout", m.opts.CacheSyncTimeout)
	syncCtx, cancel := context.WithTimeoutCause(ctx, m.opts.CacheSyncTimeout,
		fmt.Errorf("cache not synced within %v (Options.CacheSyncTimeout)", m.opts.CacheSyncTimeout))
	defer cancel()
	if err := m.cache.WaitForSync(syncCtx); err != nil {
		if ctx.Err() == nil {
			fail(fmt.Errorf("manager: %w", err))
		}
		return false
	}
	m.log.Info("Cache synced")
	// What the cache holds stays in the heap from now on: an operator
	// that it leaves no room to collect in would crawl through all its
	// work, so it fails before its controllers start.
	if err := m.guard.Synced(ctx); err != nil {
		fail(fmt.Errorf("manager: %w", err))
		return false
	}
	m.synced.Store(true)
	return true
}

// startRunnables starts the runnables that need no lease, joins the shard
// group, and starts the leader-only runnables at once or once first
// elected: a lease lost later does not stop them (a Runnable need not
// support a second Start), the fence in their context does. Every
// runnable's context carries the API budget, which a controller's workers
// wait for before they take keys. A controller
// added from now on (NewController) is started the same way, at once or
// once elected. Each runs on a context of its own derived from ctx, which
// the returned stop ends in order: the member leaves, the runnables stop,
// then the election ends, so that the lease is released (if asked) only
// once leader-only work has stopped and two processes never reconcile at
// once.
func (m *Manager) startRunnables(ctx context.Context, fail func(error)) workStop {
	ctx = m.budgeted(ctx)
	workCtx, stopWorkers := context.WithCancel(ctx)
	leaderCtx, stopLeaders := context.WithCancelCause(m.fenced(ctx))
	var g group
	// elected and waiting (the leader-only runnables added before the
	// election was won) are guarded by m.mu.
	var elected bool
	m.mu.Lock()
	workers, waiting := byLease(m.runnables)
	m.launch = func(rn Runnable) {
		switch {
		case !needsLeader(rn):
			g.start(workCtx, rn, fail)
		case elected:
			g.start(leaderCtx, rn, fail)
		default:
			waiting = append(waiting, rn)
		}
	}
	m.mu.Unlock()
	for _, rn := range workers {
		g.start(workCtx, rn, fail)
	}
	leave := m.join(ctx)
	resign := m.campaign(ctx, func() {
		m.mu.Lock()
		elected = true
		leaders := waiting
		waiting = nil
		m.mu.Unlock()
		close(m.elected)
		for _, rn := range leaders {
			g.start(leaderCtx, rn, fail)
		}
	}, fail)
	return func(ctx context.Context, cause error, closeFailures func() error) error {
		g.close()
		leaveErr := leave(ctx)
		stopLeaders(leaderCause(cause))
		stopWorkers()
		failure := closeFailures()
		waitErr := g.wait(ctx)
		return errors.Join(failure, leaveErr, waitErr, resign(ctx))
	}
}

// fenced returns ctx with the manager's fence, if leader election is on:
// leader-only work's writes are refused, and its controllers start no
// reconcile, while the process is not sure it still holds the lease.
func (m *Manager) fenced(ctx context.Context) context.Context {
	if m.fence == nil {
		return ctx
	}
	return fence.NewContext(ctx, m.fence)
}

// leaderCause is why leader-only work stops: with the lease lost it is
// canceled without waiting (controller.ErrAbort), since another process
// may hold the lease already.
func leaderCause(cause error) error {
	if errors.Is(cause, ErrLeaderLost) {
		return fmt.Errorf("%w: %w", controller.ErrAbort, cause)
	}
	return nil
}

// byLease splits runnables into those that need no lease and the
// leader-only ones.
func byLease(runnables []Runnable) (workers, leaders []Runnable) {
	for _, rn := range runnables {
		if needsLeader(rn) {
			leaders = append(leaders, rn)
		} else {
			workers = append(workers, rn)
		}
	}
	return workers, leaders
}

// join runs the shard member, in sharded mode, once the cache has synced:
// a slot's keys are queued from the cache when the slot is gained. The
// returned leave ends it and waits until it has left: its slots'
// reconciles have returned and its Lease is deleted, so the other replicas
// take its slots at their next round, before this one's controllers stop.
func (m *Manager) join(ctx context.Context) stopFunc {
	if m.shard == nil {
		return noStop
	}
	ctx, cancel := context.WithCancel(ctx)
	return goStop(cancel, "shard member still leaving", func() { m.shard.run(ctx, m) })
}

// campaign starts the leader-only runnables (lead) at once without leader
// election, and otherwise once elected; the returned stop ends the
// election.
func (m *Manager) campaign(ctx context.Context, lead func(), fail func(error)) stopFunc {
	if !m.opts.LeaderElection.Enabled {
		lead()
		return noStop
	}
	resign, err := m.elect(ctx, lead, fail)
	if err != nil {
		fail(err)
		return noStop
	}
	return resign
}
