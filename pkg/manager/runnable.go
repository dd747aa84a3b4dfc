package manager

import (
	"context"
	"fmt"
	"sync"
)

// Runnable is something the manager starts: a controller, a server, a
// periodic job.
type Runnable interface {
	// Start runs until ctx ends and returns nil then; an error stops the
	// manager, which returns it.
	Start(ctx context.Context) error
}

// RunnableFunc adapts a function to a Runnable.
type RunnableFunc func(ctx context.Context) error

var _ Runnable = RunnableFunc(nil)

// Start calls f.
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// LeaderElectionRunnable is implemented by a Runnable that says whether it
// may run only on the leader. A Runnable that does not implement it, such
// as a controller, runs only on the leader.
type LeaderElectionRunnable interface {
	NeedLeaderElection() bool
}

// needsLeader reports whether r runs only on the leader.
func needsLeader(r Runnable) bool {
	if le, ok := r.(LeaderElectionRunnable); ok {
		return le.NeedLeaderElection()
	}
	return true
}

// named describes a runnable in errors and logs.
func named(r Runnable) string {
	if n, ok := r.(interface{ Name() string }); ok {
		return fmt.Sprintf("%q", n.Name())
	}
	if s, ok := r.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", r)
}

// group runs runnables, each in a goroutine until its context ends, and
// waits for them. None starts once the group is closed, so that a lease
// won while the manager stops starts no leader-only work.
type group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *group) start(ctx context.Context, rn Runnable, fail func(error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.wg.Go(func() {
		if err := rn.Start(ctx); err != nil {
			fail(fmt.Errorf("manager: runnable %s: %w", named(rn), err))
		}
	})
}

func (g *group) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// wait waits for the runnables to return, or for ctx to end.
func (g *group) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runnables still running: %w", context.Cause(ctx))
	}
}
