// Package manager runs an operator: it builds the clients, cache and
// metrics registry once, and starts everything else in order.
//
// Its contract:
//
//   - Built once: New makes the HTTP client, REST mapper, cache, write
//     client (uncached, server-side apply included), clientset, event
//     broadcaster and Prometheus registry. Invalid Options fail New,
//     naming the field.
//   - Ordered: Start checks that the API server answers (ErrUnreachable),
//     serves /metrics, the probes and webhooks, syncs the cache
//     (Options.CacheSyncTimeout; the error names each type not synced),
//     starts the runnables that need no lease, then, once elected, the
//     leader-only ones. Controllers are leader-only; a runnable is unless
//     it implements LeaderElectionRunnable and says not.
//   - One leader: with Options.LeaderElection, leader-only runnables run
//     only while this process holds a Lease; the cache syncs before the
//     election, so a standby takes over warm. Losing the lease (an API
//     server or etcd outage, another process taking it) keeps the
//     process, its caches and queues: leader-only work waits at the
//     fence while the manager campaigns again, and resumes once elected
//     (LeaderElectionOptions.ExitOnLoss returns ErrLeaderLost instead).
//   - Fenced: past RenewDeadline without a successful renewal, controllers
//     start no reconcile and leader-only writes are refused before they
//     are sent (ErrFenced), so a frozen leader never acts beside a new
//     one. See docs/reliability.md.
//   - Probes: /healthz passes while the process serves, an outage
//     included; /readyz fails until the cache has synced, while any
//     type registered before Start fails to list or watch (its CRD
//     deleted included; a type registered later reports through its
//     Lister's Status only) and, with leader election, once the
//     Lease has not been read or renewed for RenewDeadline ("waiting for
//     the API server"), and
//     lists each failing check and why. A standby is ready, so that a
//     rolling update progresses; /readyz?verbose says "leader" or
//     "standby".
//   - Metrics: /metrics serves opkit's cache, workqueue, reconcile, REST
//     client, event (opkit_events_refused_total), leader
//     (leader_election_master_status) and webhook metrics under
//     client-go's and controller-runtime's names,
//     plus the Go and process collectors. Options.Metrics.Secure lets in
//     only tokens the API server authenticates and authorizes, at a
//     bounded number of reviews (MetricsAuthOptions).
//   - One API budget: every client the manager makes, and every client
//     built from Config, shares one rate of requests (Options.APIBudget),
//     served by lane: lease renewals never wait, then reviews, then
//     reconciles shared by controller weight (APIWeight), then informers;
//     a 429 or Retry-After lowers the rate, which recovers additively.
//     While it limits, a controller's workers wait for it before they take
//     keys, which stay queued by priority (docs/api-budget.md).
//   - Events: EventRecorder refuses a name the API server would refuse on
//     every Event, and logs and counts each Event refused all the same.
//   - Traced only when asked: with Options.TracerProvider; the manager
//     sets no global tracer provider.
//   - Never silent: without Options.Logger everything logs through klog.
//   - Graceful: when Start's context ends, runnables stop (reconciles in
//     flight finish), the lease is released if asked, then the cache and
//     servers stop, within Options.ShutdownTimeout; Start returns nil.
//   - Webhooks: with Options.Webhook.Port, the webhook server runs on every
//     replica, leader or not (WebhookOptions, GuardWebhook).
//   - Process-wide settings: Start sets the Go memory limit from the
//     container's, less the binary's resident pages as measured
//     (MemoryLimitOptions; off with Off, or by GOMEMLIMIT); SignalContext
//     is main's.
//   - Memory: under memory pressure the cache sheds what LazyListers
//     fetched, opkit_memory_pressure says so and /readyz?verbose notes it;
//     a process the collector has held for GCBoundExit fails with
//     ErrGCBound, saying how large a limit would fit.
//   - Thin builder: NewController takes the watches as values (For, Owns,
//     Watches, WatchSource, Finalizer); each watch names its type once, in
//     the reconciler's Lister field. Writer(name) is the controller's
//     client, writing as its field owner.
//   - Acting as the tenant: WriterAs(name, user) is that writer with every
//     request sent as user (client-go's impersonation; ServiceAccount(ns,
//     name) is a ServiceAccount's user), so the API server authorizes
//     what the operator does for someone else as them, at each request.
//     Its reads go to the API server as user, never to the cache. It holds
//     nothing per user.
//   - Controllers come and go: NewController on a running manager starts
//     the controller at once, as if added before Start (leader-only,
//     fenced, or on every replica in sharded mode); RemoveController
//     stops it, dropping or draining its queue (Removal), releases the
//     cache types its watches hold and deletes its metric series, and
//     frees its name. /debug/holds, beside /metrics and behind the same
//     authorization, lists who holds which cached type
//     (cache.TypeStatus.Owners).
//   - Finding the cluster: Config looks where kubectl and in-cluster pods
//     look, and names every place it looked when none works.
//
// # Which client
//
// A controller reads through its Listers and writes through Writer(name):
// a client that reads the kinds the cache holds from the cache (copying,
// as controller-runtime's GetClient does) and names the controller as the
// field owner of every write. The README, the scaffold and the tutorial use
// it, and a newcomer needs no other. CachedClient is that client without
// a field owner, kept exported for controller-runtime code and helpers
// (controllerutil.CreateOrUpdate) run unchanged while porting; GetClient
// becomes Writer(name), or CachedClient as is. UncachedClient reads and
// writes through the API server, never the cache: controller-runtime's
// GetAPIReader, for reads that must be live. WriterAs is Writer acting as
// another user.
//
// # Sharded mode
//
// With Options.Sharding, the replicas share the keys of the controllers
// NewController builds, instead of one leader doing all the work
// (ShardingOptions says how):
//
//   - Slots: a key belongs to one of ShardingOptions.Slots slots (default
//     DefaultSlots), by the primary object's UID, its namespace or its
//     controller owner's UID (ShardBy). Each replica holds its share
//     through one Lease of its own.
//   - Split caches: each replica caches only its slots' objects of the
//     sharded types; Watches types stay whole unless ShardWatch shards
//     them.
//   - At most one replica reconciles a key at a time, provided the
//     processes' clocks run at about the same rate, RenewDeadline <
//     LeaseDuration, and a reconcile started before the renew deadline
//     ends within LeaseDuration - RenewDeadline (set
//     controller.Options.ReconcileTimeout below it). Write with
//     resourceVersion preconditions all the same.
//   - A reconciler never reads NotFound for an object that exists: keys
//     of slots this replica does not hold, or does not yet cache, are
//     never reconciled here.
//   - Defaults: LeaseDuration 15s, RenewDeadline 10s, RetryPeriod 2s: a
//     crashed replica's slots move after about 15–17s, a graceful leave's
//     within a round or two. Group is required.
//   - With LeaderElection: sharded controllers run on every replica; other
//     leader-only runnables still run only on the leader.
//   - Autoscale (AutoscaleOptions, off by default): the replicas publish
//     their queue wait p99 in their Leases, and the holder of slot 0 sets
//     the operator's Deployment's replicas from them through its scale
//     subresource, never while slots move.
//   - Probes and metrics: /readyz's "sharding" check fails, saying why,
//     until a round of membership has completed and this replica holds,
//     and caches, at least its share of the slots; /metrics serves
//     opkit_sharding_slots_held, opkit_sharding_members,
//     opkit_sharding_handovers_total and
//     opkit_sharding_last_takeover_seconds.
//
// Shard when one replica is not enough: too many objects to reconcile in
// time, or reconciles that wait on slow external systems. Leader election
// is simpler, and its standbys take over warm.
package manager
