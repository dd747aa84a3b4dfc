// Package queueaccess is how opkit's own packages (package controller's
// workers) reach what package queue keeps from its users, so that
// pkg/queue exports what a user calls and no more:
//
//   - queue.Internal(q, Key{}) returns a Queue, the queue's side for
//     opkit's packages: Gets that take a key only while the caller holds a
//     Permit, so that a worker waits for its permit with no key in hand.
//
// It imports nothing from pkg/ and holds no state; its argument Key, which
// only opkit can name, keeps queue.Internal opkit's.
package queueaccess

import (
	"context"
	"time"
)

// Key is the second argument of queue.Internal. No package outside opkit
// can name it, so only opkit's packages call it.
type Key struct{}

// Permit is what a worker must hold to take a key: package budget's
// Prepaid, a token of the API budget paid before the key is taken.
// Its methods are safe for concurrent use.
type Permit interface {
	// Acquire blocks until the caller holds the permit and returns nil, or
	// until ctx ends and returns an error, holding nothing. Held already,
	// it returns nil at once.
	Acquire(ctx context.Context) error
	// Release gives the permit back, if it is held.
	Release()
}

// Queue is a queue's side for opkit's packages. Its methods are safe for
// concurrent use.
type Queue[K comparable] interface {
	// GetChanged is the queue's GetChanged for a worker that must hold p
	// to take a key. It waits, as GetChanged does, until a key is ready
	// that no other worker waits for p to take; then, with the queue's
	// lock released, it acquires p; then it takes the key first in the
	// queue at that moment, by the queue's priorities, fairness and aging.
	// If by then no key is ready (another worker took it), it releases p
	// and waits again. So a worker holds p only while a key is ready for
	// it, and while it waits for p, keys wait in the queue, in its order.
	// A key is handed out with p held: its owner spends or releases it. It
	// returns shutdown true, holding no key and no permit, once the queue
	// shuts down or ctx ends.
	GetChanged(ctx context.Context, p Permit) (key K, priority int, changed time.Time, shutdown bool)
	// GetSpareChanged is the queue's GetSpareChanged(workers) for a spare
	// worker that must hold p to take a key: it acquires p once a key is
	// ready that the spare may take, as GetChanged does.
	GetSpareChanged(ctx context.Context, workers int, p Permit) (key K, priority int, changed time.Time, shutdown bool)
}
