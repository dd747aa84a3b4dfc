// Package manager runs an operator: it builds the clients, cache and
// metrics registry once, and starts everything else in order.
//
// Its contract:
//
//   - Built once: New makes the HTTP client, REST mapper, cache, write client
//     (controller-runtime's client.Client, uncached, server-side apply
//     included), clientset, event broadcaster and Prometheus registry, and
//     hands them to what it starts. Invalid Options fail New, naming the
//     field.
//   - Loud about the cluster: Start first checks that the API server
//     answers, and fails at once, naming its address (ErrUnreachable), if
//     it does not, rather than after Options.CacheSyncTimeout. The cache
//     logs "Cannot reach the API server" for a type it cannot look up for
//     that reason, apart from a type whose CRD is not installed.
//   - Ordered: Start serves /metrics and the probes first, then starts the
//     cache and waits for it to sync (Options.CacheSyncTimeout; the error
//     names each type not synced and why), then the runnables that need no
//     lease, then, once elected, the leader-only ones. A runnable is
//     leader-only unless it implements LeaderElectionRunnable and says not;
//     controllers are.
//   - One leader: with Options.LeaderElection, leader-only runnables run only
//     while this process holds a coordination.k8s.io/v1 Lease. The cache
//     syncs before the election, so a standby takes over warm. Losing the
//     lease cancels leader-only work at once (controller.ErrAbort) and
//     Start returns an error wrapping ErrLeaderLost. With ReleaseOnCancel
//     the lease is given up on a stop, after leader-only work has stopped,
//     so a standby takes over in about RetryPeriod instead of
//     LeaseDuration.
//   - Fenced: a leader acts only while its last successful renewal, sent
//     on this process's monotonic clock, is younger than RenewDeadline,
//     which is shorter than the LeaseDuration a standby waits from the
//     moment it saw that renewal. Past it (a GC pause, a frozen VM, a CPU
//     limit, a partition) controllers start no reconcile and every write
//     sent with a leader-only runnable's context through a client built
//     from Config is refused before it is sent (ErrFenced), until the next
//     renewal succeeds or the lease is found lost; leader_election_master_status reads 0
//     meanwhile. client-go's elector alone gives up RenewDeadline after
//     its first failed try, so a process resumed after a freeze would go
//     on acting beside the new leader for up to RenewDeadline. What a
//     fence cannot do: recall a request already sent. See
//     docs/reliability.md.
//   - Probes: /healthz passes while the process serves; /readyz fails until
//     the cache has synced, and while any type's list or watch fails (a
//     stale cache: RBAC, or the API server out of reach), and lists each
//     failing check and why.
//   - Metrics: /metrics serves the registry: opkit's cache, workqueue and
//     reconcile metrics (client-go's and controller-runtime's names), the
//     REST client metrics of every request the manager's clients make, the
//     Events the API server refused (opkit_events_refused_total), with leader
//     election whether this replica leads (leader_election_master_status), the Go and
//     process collectors, and with a webhook server controller-runtime's
//     webhook request metrics (controller_runtime_webhook_requests_total and the like).
//     Options.Metrics.Secure serves them over HTTPS only to tokens the API
//     server authenticates (TokenReview) and authorizes for get on
//     /metrics (SubjectAccessReview). pprof is optional.
//   - Secure metrics at a bounded cost: each review's answer is cached
//     (keyed by the token's SHA-256; 2m if it lets in, 10s if it refuses;
//     LRU caches of bounded size), a token over 8 KiB gets 401 without a
//     review, and tokens not seen authenticated within the hour are
//     reviewed within a token bucket (by default 10, refilled at 5/s):
//     a flood of distinct bad tokens costs at most Burst + rate × its
//     duration TokenReviews, and each request over the budget gets 429
//     with Retry-After. A token seen authenticated is served through a
//     flood (Options.Metrics.Auth).
//   - Events: EventRecorder records events.k8s.io/v1 Events. It refuses a
//     name the API server would refuse on every Event (not a qualified
//     name), gives an Event without an action its reason as action, and
//     logs and counts each Event the API server refuses all the same
//     (opkit_events_refused_total), which client-go's broadcaster would drop
//     with a line in klog only.
//   - Traced when asked: with Options.TracerProvider, every controller
//     NewController builds makes a span per reconcile, and the manager's
//     clients make a child span for each API request sent with the
//     reconcile's context (package tracing). The manager sets no global
//     tracer provider; without one nothing is traced.
//   - Never silent: without Options.Logger the manager, its cache and its
//     controllers log through klog, as client-go does, to standard error
//     unless klog is configured otherwise.
//   - Graceful: when Start's context ends, runnables stop (controllers let
//     the reconciles in flight finish), the lease is released if asked, then
//     the cache and servers stop, within Options.ShutdownTimeout in all;
//     Start returns nil. SignalContext ends a context at SIGTERM or SIGINT
//     and exits at a second.
//   - Webhooks: with Options.Webhook.Port set, Start runs
//     controller-runtime's webhook server (WebhookServer; package webhook
//     registers typed handlers on it) with the HTTP servers, before the
//     cache and on every replica, leader or not, since the API server
//     calls any of them; /readyz has a check named "webhook" that fails
//     until it serves TLS; it stops last, with the HTTP servers. A
//     CertDir without tls.crt and tls.key fails Start at once
//     (ErrNoWebhookCertificate), naming both files.
//     Options.Webhook.ClientCAFile makes it verify client certificates:
//     one of another CA fails the handshake, and GuardWebhook refuses a
//     request without one on the admission paths. GuardWebhook also
//     bounds what admission requests cost: 413 from 7 MiB, and at most
//     14 MiB of bodies handled at once (503 once a request's context ends
//     waiting).
//   - Within the container's memory: SetMemoryLimit, called once by main,
//     sets the Go runtime's soft memory limit from the cgroup's (v1 or
//     v2); the manager never changes that process-wide setting itself.
//   - Thin builder: NewController wires the common controller, one primary
//     type (For), owned types (Owns), other watches (Watches, WatchSource),
//     predicates and options, as values rather than a chain of methods.
//     Each watch takes the address of the reconciler's Lister of its type,
//     registers the type and sets the Lister if it is nil, so the type is
//     named once, in the reconciler's field, and inferred everywhere else.
//     Owns indexes the owned type by controller, so that a reconciler
//     lists an owner's children with cache's Lister.ControlledBy.
//     Finalizer holds the primary objects with a finalizer until a cleanup
//     of yours has run, so the reconciler never sees a deletion.
//   - One writer per controller: Writer(name) is the manager's cached
//     client writing as the controller's field owner, skipping writes
//     that would change nothing, counted per controller.
//   - Finding the cluster: Config looks where kubectl and in-cluster pods
//     look, and names every place it looked when none works.
//
// # Sharded mode
//
// With Options.Sharding, the replicas of an operator share the keys of
// the controllers NewController builds, instead of one leader doing all
// the work (ExampleShardingOptions):
//
//   - Slots: a key belongs to one of ShardingOptions.Slots slots (default
//     DefaultSlots, 64), by the primary object's UID (sharding.ByUID, the
//     default), its namespace (ShardBy(sharding.ByNamespace)) or its
//     controller owner's UID (sharding.ByControllerOwner). Each replica
//     keeps one Lease, "<Group>-<Identity>" in ShardingOptions.Namespace,
//     and holds the slots rendezvous hashing gives it among the live
//     replicas.
//   - Split caches: each replica caches only its slots' objects of the
//     types its sharded controllers shard. NewController registers the
//     For type with cache.TypeOptions{Sharded: true, ShardKey: <ShardBy>}
//     and each Owns type sharded so that children land with their
//     controller (sharding.ByControllerOwner under ByUID, ByNamespace
//     under ByNamespace; unsharded under ByControllerOwner, whose children
//     do not hash to the parent's slot), and sets a nil Lister of the
//     reconciler's to that registration; cache.Register with the same
//     TypeOptions returns the same registration. Watches types
//     stay whole on every replica unless ShardWatch(key, ...) shards them:
//     correct only if each object hashes to the slot of every key it maps
//     to (ByNamespace on the controller and the watch, with a mapping
//     within a namespace); WatchSource is not the cache's. The manager
//     sets the cache's Options.Cache.Sharding.Slots; where the API server
//     ignores shard selectors (ShardedListAndWatch off, or
//     cache.ServerFilterOff) each informer receives everything and keeps
//     its slots' objects: the same split, at the cost of the full stream
//     (TestShardedManagersSplitCaches, TestShardedManagersFilterInTheCache,
//     TestShardWatchRegistersSharded).
//   - One type, several ways: a type sharded by two keys (two controllers'
//     For, or a For and another's Owns), or sharded by one controller and
//     whole for another watch, keeps one registration per way, each with
//     its own informers: correct, and the cost is memory, a whole
//     registration caching every object. cache.Lookup of such a type is
//     ambiguous; an unsharded watch of it reads the Lister it was given, or
//     else registers the type with the default TypeOptions.
//   - Dispatch: a worker that takes a key of a slot this replica does not
//     hold forgets it before the read-your-writes wait and before any
//     reconcile, and counts it (opkit_sharding_dispatch_skipped_total), as
//     it does a key whose object the split cache lacks: the replica
//     holding its slot has it.
//   - Handover: a replica that gains slots first makes its cache hold
//     them (cache.Cache.SetSlots with every slot it holds), and refuses
//     their keys with a retry meanwhile, so a reconciler never reads
//     NotFound for an object that exists; then it queues every key of
//     them. One that gives slots up stops dispatching them at once, waits
//     for their reconciles in flight, only then removes its claim, and
//     drops them from its cache. A failed SetSlots is retried with
//     backoff, counted (opkit_sharding_cache_set_slots_errors_total), and
//     keeps the slots it may not hold refused. On a stop the replica
//     leaves the group first (its slots move at the others' next round),
//     then stops its controllers.
//   - The guarantee: a key is reconciled by at most one replica at a
//     time, provided the processes' clocks run at about the same rate,
//     RenewDeadline < LeaseDuration, and a reconcile started before the
//     renew deadline ends within LeaseDuration - RenewDeadline (set
//     controller.Options.ReconcileTimeout below it). A replica that cannot
//     renew within RenewDeadline starts no reconcile; the others take its
//     slots only LeaseDuration after its Lease last changed, on their own
//     clocks. Write with resourceVersion preconditions all the same: they
//     catch what slips through the timing assumptions.
//   - Defaults: LeaseDuration 15s, RenewDeadline 10s, RetryPeriod 2s
//     (client-go's leader election's): a crashed replica's slots move
//     after about 15–17s, a graceful leave's within a round or two.
//     Namespace defaults to the pod's, as for leader election; Group is
//     required.
//   - With LeaderElection: sharded controllers run on every replica,
//     leader or not; other leader-only runnables still run only on the
//     leader, and losing the lease still stops the process.
//   - Probes and metrics: /readyz has a check named "sharding" that fails,
//     saying why, until a round of membership has completed, this replica
//     holds at least its share of the slots (Slots/members), and its
//     cache holds every slot it holds
//     (TestShardingNotReadyUntilCacheHoldsSlots);
//     /metrics serves opkit_sharding_slots_held, opkit_sharding_members,
//     opkit_sharding_handovers_total and
//     opkit_sharding_last_takeover_seconds.
//
// Shard when one replica is not enough: too many objects to reconcile in
// time, or reconciles that wait on slow external systems. Leader election
// is enough when one replica keeps up: it is simpler and its standbys
// take over warm, while sharded replicas cache only their share.
package manager
