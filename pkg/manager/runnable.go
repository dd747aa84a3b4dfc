package manager

import (
	"context"
	"fmt"
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
