package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Request names the object to reconcile: its namespace (empty for a
// cluster-scoped object) and name. It is the key type of most controllers.
type Request struct {
	Namespace string
	Name      string
}

// String returns "namespace/name", or "name" for a cluster-scoped object,
// as kubectl and client-go's cache keys spell it.
func (r Request) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Reconciler brings the world in line with the object that key names.
//
// It may be called from several goroutines at once, but never for the same
// key at once. ctx carries the controller's logger (logr.FromContextOrDiscard)
// with the key and a reconcile ID, and ends at the controller's per-reconcile
// timeout or shutdown.
type Reconciler[K comparable] interface {
	Reconcile(ctx context.Context, key K) (Result, error)
}

// Func adapts a function to a Reconciler.
type Func[K comparable] func(ctx context.Context, key K) (Result, error)

var _ Reconciler[Request] = Func[Request](nil)

// Reconcile calls f.
func (f Func[K]) Reconcile(ctx context.Context, key K) (Result, error) { return f(ctx, key) }

// Result says what happens to a key after a Reconcile that returned no
// error. Build it with Done, RequeueAfter or RequeueWithBackoff; the zero
// value is Done().
type Result struct {
	after       time.Duration // with requeue: the delay, > 0; 0: the rate limiter's
	requeue     bool
	priority    int
	hasPriority bool
}

// Done reports that the object is in line with its spec: the key is
// forgotten (its retry backoff reset) until an event queues it again.
func Done() Result { return Result{} }

// RequeueAfter asks for the key to be reconciled again once d has passed,
// for work that waits on something no event announces (an external system,
// a clock). Its retry backoff is reset, as for Done.
//
// A d of zero or less is Done(), as controller-runtime treats a
// Result{RequeueAfter: d} with such a d: RequeueAfter(time.Until(deadline))
// with the deadline passed means there is nothing left to wait for.
// RequeueWithBackoff asks for a requeue without a delay of its own.
func RequeueAfter(d time.Duration) Result {
	if d <= 0 {
		return Done()
	}
	return Result{after: d, requeue: true}
}

// RequeueWithBackoff asks for the key to be reconciled again after the
// controller's per-key backoff, which grows with each requeue in a row, as
// after an error, but without logging or counting an error. It is
// controller-runtime's Result{Requeue: true}. Its backoff is reset by the
// next Done or RequeueAfter.
func RequeueWithBackoff() Result { return Result{requeue: true} }

// WithPriority returns r with the requeue at priority p (see package queue:
// higher is served first). Without it the requeue keeps the priority the key
// was handed out with. It means nothing on Done.
func (r Result) WithPriority(p int) Result {
	r.priority, r.hasPriority = p, true
	return r
}

// IsDone reports whether r asks for no requeue.
func (r Result) IsDone() bool { return !r.requeue }

// Requeue reports whether r asks for a requeue, and after how long: a
// positive delay (RequeueAfter), or zero for the controller's per-key
// backoff (RequeueWithBackoff).
func (r Result) Requeue() (after time.Duration, ok bool) { return r.after, r.requeue }

// Priority returns the priority set by WithPriority, if any.
func (r Result) Priority() (p int, ok bool) { return r.priority, r.hasPriority }

// String describes r, for logs.
func (r Result) String() string {
	s := "done"
	if after, ok := r.Requeue(); ok {
		s = "requeue with backoff"
		if after > 0 {
			s = "requeue after " + after.String()
		}
	}
	if p, ok := r.Priority(); ok && r.requeue {
		s += fmt.Sprintf(" at priority %d", p)
	}
	return s
}

// Soonest returns the result of results that runs the key again soonest,
// for a reconciler made of parts that each return a Result, as
// controller-runtime code combines its Results (cluster-api's
// LowestNonZeroResult, say). The precedence:
//
//   - A requeue beats Done: Soonest is Done only if every result is (or
//     there are none).
//   - RequeueWithBackoff beats any RequeueAfter: it asks to run again as
//     soon as the per-key backoff allows, as controller-runtime's
//     Requeue: true wins in those helpers.
//   - Of RequeueAfters, the shortest delay wins.
//   - Of results equally soon, the one with the highest priority set by
//     WithPriority wins, so a priority asked for is kept; with none set,
//     the first. The winner is returned whole, its priority included, and
//     the others' priorities are dropped.
//
// Errors are not Results, and win over them: the controller ignores the
// Result returned beside a non-nil error and retries with backoff, or
// not at all if the error is terminal. Combine the parts' errors with
// errors.Join; the joined error is terminal if any part is (errors.Is
// finds ErrTerminal in it), as on controller-runtime, so join a terminal
// error with a retryable one only if neither should be retried.
func Soonest(results ...Result) Result {
	best := Done()
	for _, r := range results {
		if sooner(r, best) {
			best = r
		}
	}
	return best
}

// sooner reports whether a runs the key again before b, or as soon but at
// a priority set higher than b's.
func sooner(a, b Result) bool {
	switch {
	case !a.requeue:
		return false
	case !b.requeue:
		return true
	case a.after != b.after:
		// A zero delay is the backoff's, which comes first.
		return a.after < b.after
	case !a.hasPriority:
		return false
	default:
		return !b.hasPriority || a.priority > b.priority
	}
}

// ErrTerminal is what errors.Is finds in an error made by Terminal.
var ErrTerminal = errors.New("terminal error")

// Terminal wraps err to say that retrying will not help: the input is wrong
// and only a change to the object (which queues it again) can fix it. The
// controller logs and counts it and does not retry. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

type terminalError struct{ err error }

func (e terminalError) Error() string        { return "terminal error: " + e.err.Error() }
func (e terminalError) Unwrap() error        { return e.err }
func (e terminalError) Is(target error) bool { return target == ErrTerminal }
