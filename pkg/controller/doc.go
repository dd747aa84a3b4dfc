// Package controller runs a Reconciler over the keys its sources queue, with
// a pool of workers.
//
// Its contract:
//
//   - One key, one worker: a key is never reconciled by two workers at once;
//     different keys are reconciled in parallel, up to
//     Options.MaxConcurrentReconciles plus Options.SpareWorkers.
//   - Quiet tenants start at once: beside its MaxConcurrentReconciles
//     workers, a controller with a tenant (the namespace, for
//     reconcile.Request keys) runs Options.SpareWorkers spare workers
//     (default: as many) that, while every regular worker is busy, take
//     only keys of tenants with no key in flight (queue.Queue.GetSpare). A
//     tenant that floods the queue keeps the regular workers busy but never
//     occupies a spare, so another tenant's change need not wait for a
//     flood reconcile to end (TestQuietTenantStartsDuringFlood). A spare
//     never runs beside an idle worker, so while only one tenant has work,
//     at most MaxConcurrentReconciles of its keys are in flight, as without
//     spares (TestOneTenantGetsNoSpare); with others busy, at most
//     MaxConcurrentReconciles+1. A negative Options.SpareWorkers turns
//     them off.
//   - Every outcome handled: on Done the key is forgotten (its backoff
//     reset); on RequeueAfter(d) it is queued again after d (a d of zero or
//     less is Done, as on controller-runtime); on RequeueWithBackoff, or an
//     error, it is queued again after the rate limiter's per-key backoff,
//     unless the error is terminal (reconcile.Terminal), which is logged
//     and counted but not retried. Done is always called, so a key is never
//     stuck.
//   - Panics recovered: a panicking reconciler is recovered, logged with its
//     stack, counted and retried with backoff, unless Options.CrashOnPanic.
//   - Bounded: Options.ReconcileTimeout ends a reconcile's context with a
//     cause wrapping ErrReconcileTimeout, and counts it.
//   - Synced before working: Start waits for every source's initial keys
//     (at most Options.CacheSyncTimeout; the error names each source not
//     synced) before the first reconcile.
//   - Graceful: when Start's context ends, no new key is handed out, the
//     reconciles in flight get Options.DrainTimeout to finish with their
//     contexts live, and Start returns nil. A context canceled with a cause
//     wrapping ErrAbort (a lost leader lease) cancels them at once instead.
//   - Gated when sharded: with Options.Gate, a worker asks the gate about
//     each key it takes before anything else (the read-your-writes wait
//     included): Admit reconciles it, Skip forgets it (another replica
//     owns it), Retry queues it again with backoff (its owner is not
//     known yet); the gate hears when an admitted key's reconcile has
//     returned (TestGate). The manager's sharded mode sets it.
//   - Reads its own writes: a reconcile does not start until the cache has
//     caught up with the writes the key's previous reconcile made, at most
//     Options.ReadYourWritesTimeout; then it runs anyway, and the wait is
//     counted as a timeout. A key that waits is parked and holds no
//     worker. The writes are those made with the reconcile's context
//     through the manager's clients (Client, CachedClient and the writers
//     over them), and through any other client once recorded with
//     RecordWrite; DeleteAllOf and subresource creates (an eviction) are
//     not recorded. Only the key that wrote waits: another key's
//     reconcile reads what the cache holds, as on controller-runtime. On
//     by default; a negative Options.ReadYourWritesTimeout turns it off.
//   - Traceable: each reconcile's context carries the logger, with the
//     controller's name, the key (namespace and name for a
//     reconcile.Request) and a reconcile ID (see ReconcileID). With
//     Options.TracerProvider it also carries an OpenTelemetry span,
//     "reconcile <name>", with the key, the reconcile ID, the result and
//     the change time of the event that queued the key, linked to the
//     reconcile that requeued the key if one did (package tracing); without
//     one no tracing code runs.
//   - Observable: with Options.Registerer, controller-runtime's reconcile
//     metrics (controller_runtime_reconcile_total{controller,result},
//     controller_runtime_reconcile_errors_total, ..._terminal_reconcile_errors_total,
//     ..._reconcile_panics_total, ..._reconcile_time_seconds,
//     ..._reconcile_timeouts_total, ..._max_concurrent_reconciles,
//     ..._active_workers) with the same names, labels and meanings (spare
//     workers count in both: the maximum is MaxConcurrentReconciles plus
//     SpareWorkers, TestSpareWorkersBound), and the
//     workqueue metrics with client-go's names and meanings and
//     controller-runtime's labels (the controller label is the
//     controller's name), so existing dashboards and alerts work; package
//     metrics lists the few differences.
//   - Lag measured end to end: with Options.Registerer, the controller's
//     sources record when the change behind each key happened at the API
//     server, and a worker that gets the key observes the time since in
//     opkit_controller_event_lag_seconds{controller} (package metrics says
//     how it splits into parts, and its precision); the sources observe
//     their own part in opkit_source_event_lag_seconds{controller,type}.
//     The change times wait beside the queue, not in it, and only while
//     metrics are on (TestEventLag).
//   - Testable in fake time: Options.Clock tells the queue the time, so a
//     test steps a k8s.io/utils/clock/testing FakeClock past a
//     RequeueAfter or a retry's backoff instead of waiting for it
//     (Example_requeueAfter).
//   - Misuse is an error: a controller with no sources, started twice, or
//     watching after Start returns an error (ErrNoSources for the first);
//     a start whose sources do not sync in time wraps cache.ErrNotSynced;
//     invalid
//     Options fail New with a message naming the field.
package controller
