// Package controller runs a Reconciler over the keys its sources queue, with
// a pool of workers.
//
// Its contract:
//
//   - One key, one worker: a key is never reconciled by two workers at
//     once; different keys are reconciled in parallel, up to
//     Options.MaxConcurrentReconciles plus Options.SpareWorkers.
//   - Quiet tenants start at once: spare workers (Options.SpareWorkers,
//     on by default for reconcile.Request keys) take only keys of tenants
//     with nothing in flight, so a tenant that floods the queue never
//     delays another's change behind its reconciles. While only one tenant
//     has work, at most MaxConcurrentReconciles of its keys run, as
//     without spares.
//   - Every outcome handled: Done forgets the key's backoff; RequeueAfter(d)
//     queues it again after d (d <= 0 is Done, as on controller-runtime);
//     RequeueWithBackoff or an error queues it after the per-key backoff,
//     unless the error is terminal (reconcile.Terminal): logged and
//     counted, not retried. A key is never stuck.
//   - Panics recovered: logged with the stack, counted and retried with
//     backoff, unless Options.CrashOnPanic.
//   - Bounded: Options.ReconcileTimeout ends a reconcile's context with a
//     cause wrapping ErrReconcileTimeout.
//   - Synced before working: Start waits for every source's initial keys
//     (Options.CacheSyncTimeout) before the first reconcile.
//   - Graceful: when Start's context ends, no new key is handed out, the
//     reconciles in flight get Options.DrainTimeout to finish, and Start
//     returns nil. A cause wrapping ErrAbort (a lost leader lease) cancels
//     them at once instead.
//   - Reads its own writes: a reconcile does not start until the cache has
//     caught up with the writes the key's previous reconcile made through
//     the manager's clients, for at most Options.ReadYourWritesTimeout
//     (which says where it stops); a key that waits holds no worker.
//   - Gated when sharded: with Options.Gate, a worker asks the Gate about
//     each key before anything else; the manager's sharded mode sets it.
//   - Waits for the API budget with no key in hand: while the manager's
//     API budget limits (a rate set, or after the API server pushed
//     back), a worker takes its next key only once the budget has granted
//     it a token of the controller's share, so that keys wait in the
//     queue, where priorities and tenants order them, and a key of higher
//     priority queued meanwhile goes first. The reconcile's first request
//     spends that token; a reconcile that sends none gives it back.
//     Unlimited, the default, it costs nothing (docs/api-budget.md).
//   - Traceable: each reconcile's context carries the logger, with the
//     controller's name, the key and a ReconcileID, and with
//     Options.TracerProvider a span (package tracing). It also names the
//     controller to the manager's API budget, so that the reconcile's API
//     requests spend the controller's share (docs/api-budget.md).
//   - Observable: with Options.Registerer, controller-runtime's reconcile
//     metrics and client-go's workqueue metrics under their usual names,
//     labels and meanings (spare workers count in
//     controller_runtime_max_concurrent_reconciles), and the event lag
//     end to end (opkit_controller_event_lag_seconds); package metrics
//     lists the few differences.
//   - Testable in fake time: Options.Clock tells the queue the time.
//   - Misuse is an error: no sources is ErrNoSources; a second Start or a
//     watch after Start is an error; sources not synced in time wrap
//     cache.ErrNotSynced; invalid Options fail New, naming the field.
package controller
