// Package reconcile holds what a controller's user writes: a Reconciler that
// brings the world in line with one object, named by a key, and the Result
// it returns.
//
// Its contract:
//
//   - One method: a Reconciler[K] has Reconcile(ctx, key), and Func adapts a
//     function, as http.HandlerFunc does.
//   - Level-triggered: a Reconciler is told which key changed, never what
//     changed. It reads the current state (through a cache Lister) and acts
//     on that, so a missed or merged event loses nothing.
//   - Results that cannot contradict themselves: the zero Result, also
//     Done(), means finished; RequeueAfter(d) asks to run again after d,
//     and is Done() for a d of zero or less, as on controller-runtime;
//     RequeueWithBackoff() asks to run again after the per-key backoff;
//     WithPriority sets the requeue's priority. There is no flag pair.
//   - Results compose: Soonest returns the one of several that runs the
//     key again soonest, for a reconciler made of parts.
//   - Errors retry: a non-nil error is retried with the controller's
//     per-key backoff, unless it wraps Terminal, which is logged, counted
//     and not retried (errors.Is(err, ErrTerminal) tells which).
//   - No queue: this package knows nothing of queues or workers, so
//     Reconcilers are tested by calling them.
package reconcile
