package controller

import (
	"time"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// Verdict is a Gate's answer for a key a worker just got.
type Verdict int

const (
	// Admit: this replica reconciles the key now.
	Admit Verdict = iota
	// Skip: another replica owns the key; the worker forgets it (its
	// backoff reset) without reconciling it. The owner has its own event
	// for it, and a replica that comes to own it queues it itself.
	Skip
	// Retry: the gate cannot tell yet who owns the key (its object is not
	// in the cache yet), or this replica owns it but may not act on it
	// yet; the worker queues it again with the rate limiter's backoff,
	// without reconciling it.
	Retry
)

// Gate decides, before each reconcile, whether this replica may reconcile
// a key: a sharded operator's replicas each reconcile only the keys of the
// slots they hold (the manager's sharded mode). A worker asks the gate
// first, before the read-your-writes wait and before any reconcile, so a
// key the gate refuses costs neither.
//
// Admit must not block and must be safe for concurrent use. retries is the
// number of times the key was retried with backoff since it last
// succeeded, so that a gate can stop answering Retry for a key whose owner
// never becomes known. With Admit, done is not nil and the worker calls it
// exactly once, after the key's reconcile (or read-your-writes park) has
// returned and its outcome is settled; requeued says whether the key was
// queued again. A gate counts a key as in flight from Admit to done, which
// is how a replica that gives a slot up waits for the slot's reconciles.
// With Skip and Retry, done is nil.
type Gate[K comparable] interface {
	Admit(key K, retries int) (v Verdict, done func(requeued bool))
}

// admit asks the gate, if any, whether key may be reconciled; when it may
// not, the key has been forgotten or queued again, with changed, its
// change time, and admit returns false.
func (c *Controller[K]) admit(key K, changed time.Time) (done func(requeued bool), ok bool) {
	if c.opts.Gate == nil {
		return settled, true
	}
	v, done := c.opts.Gate.Admit(key, c.queue.NumRequeues(key))
	switch v {
	case Admit:
		if done == nil {
			done = settled
		}
		return done, true
	case Retry:
		c.queue.AddWithOpts(queue.AddOpts{RateLimited: true, Changed: changed}, key)
	default:
		c.queue.Forget(key)
	}
	return nil, false
}

// settled is the done of a key admitted without a gate. A function
// literal in admit would be allocated per call, since admit is generic.
func settled(bool) {}
