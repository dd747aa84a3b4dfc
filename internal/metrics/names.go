package metrics

// The names and label values of opkit's metrics. They are declared here,
// once, for opkit's packages and tests; users read them in pkg/metrics's
// doc and docs/metrics.md, which test/docs and pkg/metrics's tests keep
// in step with these.

// The reconcile metrics, with controller-runtime's names, labels and
// meanings, so that its dashboards and alerts work unchanged. Each is
// labelled by controller name.
const (
	// ReconcileTotal counts reconciles by result: success, error, requeue
	// (with backoff) or requeue_after.
	ReconcileTotal = "controller_runtime_reconcile_total"
	// ReconcileErrors counts reconciles that returned an error, terminal
	// ones and recovered panics included.
	ReconcileErrors = "controller_runtime_reconcile_errors_total"
	// TerminalReconcileErrors counts reconciles that returned a terminal
	// error, which is not retried.
	TerminalReconcileErrors = "controller_runtime_terminal_reconcile_errors_total"
	// ReconcilePanics counts reconciles that panicked.
	ReconcilePanics = "controller_runtime_reconcile_panics_total"
	// ReconcileTime observes the seconds each reconcile took.
	ReconcileTime = "controller_runtime_reconcile_time_seconds"
	// ReconcileTimeouts counts reconciles whose context the controller's
	// per-reconcile timeout ended.
	ReconcileTimeouts = "controller_runtime_reconcile_timeouts_total"
	// MaxConcurrentReconciles is the controller's number of workers.
	MaxConcurrentReconciles = "controller_runtime_max_concurrent_reconciles"
	// ActiveWorkers is the number of workers reconciling now.
	ActiveWorkers = "controller_runtime_active_workers"
)

// Reconcile results, the values of ReconcileTotal's result label.
const (
	ResultSuccess      = "success"
	ResultError        = "error"
	ResultRequeue      = "requeue"
	ResultRequeueAfter = "requeue_after"
)

// HandlerPanics counts the panics a controller's sources recovered from its
// handlers, map functions and predicates, labelled by controller and by the
// type the source watches ("v1/ConfigMap"). controller-runtime has no such
// series: a panic there ends the process.
const HandlerPanics = "opkit_controller_handler_panics_total"

// The event lag of a controller, in three parts and end to end. With the
// cache's opkit_cache_event_lag_seconds (the change at the API server to
// the informer's delivery) and workqueue_queue_duration_seconds (the wait
// in the queue until a worker gets the key), they tell where the time
// between a change and its reconcile goes.
const (
	// SourceEventLag observes, per informer event that reached a
	// controller's handler, the seconds from the informer's delivery to
	// the handler's return, its keys queued: the informer's store (the
	// delivery is dated as it begins it, by the reading that timed the
	// event before), predicates, map functions and queue adds. Labelled
	// by controller and type ("v1/ConfigMap").
	SourceEventLag = "opkit_source_event_lag_seconds"
	// ControllerEventLag observes, per reconcile caused by an informer
	// event whose change time is known, the seconds from the change at the
	// API server (estimated as for opkit_cache_event_lag_seconds: whole
	// seconds, so up to 1s too long, and subject to clock skew) to the
	// start of the reconcile. When several changes of one key coalesce
	// into one reconcile, the earliest counts. Reconciles of retries,
	// requeues, timers and changes of unknown time are not observed.
	// Labelled by controller.
	ControllerEventLag = "opkit_controller_event_lag_seconds"
)

// The read-your-writes metrics of a controller (see controller.Options
// ReadYourWritesTimeout), labelled by controller. controller-runtime's
// experimental equivalent is
// controller_runtime_client_consistency_wait_duration_seconds.
const (
	// ReadYourWritesWait observes, for each reconcile that had to wait for
	// the cache to catch up with its key's earlier writes, the seconds it
	// waited, by result: "caught_up", "timeout" (the wait's bound passed
	// and the reconcile ran with what the cache held) or "canceled" (the
	// controller stopped). A reconcile that did not wait is not observed.
	ReadYourWritesWait = "opkit_controller_read_your_writes_wait_seconds"
)

// Values of ReadYourWritesWait's result label.
const (
	WaitCaughtUp = "caught_up"
	WaitTimeout  = "timeout"
	WaitCanceled = "canceled"
)

// The REST client metrics, with client-go's names and labels.
const (
	// RESTClientRequests counts HTTP requests to the API server by status
	// code ("<error>" when none came back), method and host.
	RESTClientRequests = "rest_client_requests_total"
	// RESTClientRequestDuration observes the seconds until the response
	// headers arrived, by verb (the HTTP method) and host.
	RESTClientRequestDuration = "rest_client_request_duration_seconds"
)

// ClientWrites counts the applies and patches of a controller's writing
// client (manager.Manager.Writer), labelled by controller, verb ("apply"
// or "patch") and result: "sent" to the API server, or "skipped" because
// it would have changed nothing. controller-runtime has no such series.
const ClientWrites = "opkit_client_writes_total"

// The values of ClientWrites' labels.
const (
	VerbApply    = "apply"
	VerbPatch    = "patch"
	WriteSent    = "sent"
	WriteSkipped = "skipped"
)

// The cache's metrics, kept when cache.Options.Registerer is set. Each is
// labelled with the type's group, version and kind, its form (typed,
// metadata or unstructured) and its scope (namespaces and selectors, "*"
// for everything).
const (
	// CacheObjects is the number of objects cached.
	CacheObjects = "opkit_cache_objects"
	// CacheObjectBytes estimates the bytes of the objects cached: per
	// informer, its objects times their mean encoded size (protobuf where
	// the type has one, else JSON), sampled at ingest (the first 16
	// objects, then one in 32), so that a scrape costs no encoding. It is
	// what the objects weigh encoded, not their heap: decoded, a Go object
	// takes about 3 to 6 times its protobuf size (ConfigMaps of 1 KiB down
	// to 100 bytes, measured), before the cache's keys and indexes.
	// Labelled like CacheObjects.
	CacheObjectBytes = "opkit_cache_object_bytes"
	// CacheRelists counts full lists (or streaming lists) after the first,
	// which the informer makes when its watch falls too far behind.
	CacheRelists = "opkit_cache_relists_total"
	// CacheWatchRestarts counts watches opened after the first.
	CacheWatchRestarts = "opkit_cache_watch_restarts_total"
	// CacheFirstSync is the seconds from Start (or from the type's
	// registration, if later) until the type first synced.
	CacheFirstSync = "opkit_cache_first_sync_seconds"
	// CacheEventLag observes, per event an informer delivers, the seconds
	// from the change at the API server to the delivery (to the first of
	// the informer's handlers to get the event, or to the cache's own
	// listener while the informer has no handler), labelled by type
	// ("v1/ConfigMap", "apps/v1/Deployment") and event (add, update,
	// delete). The change time is estimated from the object's own
	// timestamps, read before the cache strips managedFields: the newest
	// managedFields time for adds and updates (the creationTimestamp for an
	// object without managedFields), the deletionTimestamp for deletes
	// (and for the update that sets it), or the newest managedFields time
	// if later (a finalizer removed after the delete request). They
	// have whole seconds, so an observation is up to 1s too long, and it
	// carries any skew between the API server's clock and the operator's.
	// Not observed: the adds of an informer's initial list (an object's
	// age is not lag), resync updates (nothing changed), deletes of
	// objects without a deletionTimestamp (deleted at once, with no
	// finalizer: most objects), inferred deletes (tombstones), objects
	// without a timestamp, and events delivered after maxStamps (4096)
	// later objects were ingested.
	CacheEventLag = "opkit_cache_event_lag_seconds"
	// CacheSyncErrors counts the informers' failed lists and watches by
	// type and class (see the SyncError constants): each failure counts
	// once, in the first class that matches in the order forbidden,
	// expired, decode, connection, then list_failed or watch_failed. A
	// failure is a list or watch request that fails, or a watch stream
	// whose connection fails midway (connection). Not counted here: an
	// error the API server sends inside a watch stream (a 410 on a
	// long-open watch) or an event that does not decode, which client-go
	// handles inside its reflector, out of the cache's sight; the watch
	// restart (CacheWatchRestarts) and, if reopening fails, that failure
	// are counted. Nor is a watch request whose connection is cut before
	// its response arrives: client-go's REST client retries it (up to 10
	// times, a second apart) and, if every retry fails, returns an empty
	// watch and no error.
	CacheSyncErrors = "opkit_cache_sync_errors_total"
	// CacheLazyFetches counts the GETs of full objects that cache.LazyListers
	// made, failed ones included, labelled like CacheObjects by the
	// metadata registration they read through (form "metadata").
	CacheLazyFetches = "opkit_cache_lazy_fetches_total"
	// CacheLazyObjects is the number of full objects cache.LazyListers hold,
	// labelled like CacheLazyFetches.
	CacheLazyObjects = "opkit_cache_lazy_objects"
	// CacheSlots is the number of slots a sharded type (cache.TypeOptions.Sharded)
	// holds, of cache.ShardingOptions.Slots.Count(): with CacheObjects, the
	// share of the type this replica caches. Absent for types not sharded.
	CacheSlots = "opkit_cache_slots"
	// CacheUnregisteredReads counts the reads by kind (such as the
	// cached client's) of a kind nobody registered, each an error for the
	// reader, labelled by type ("v1/Node") and form. A series appears with
	// the first such read: the kinds are not known before.
	CacheUnregisteredReads = "opkit_cache_unregistered_reads_total"
	// CacheHolds is the number of Listers each named owner
	// (cache.TypeOptions.Owner) holds on a cached type, labelled like
	// CacheObjects and by owner. A type registered without an owner is
	// held for the cache's life and has no series.
	CacheHolds = "opkit_cache_holds"
)

// The classes of CacheSyncErrors.
const (
	// SyncErrorForbidden: 403, RBAC refused the list or watch.
	SyncErrorForbidden = "forbidden"
	// SyncErrorExpired: 410 Gone or resource version too old; the
	// informer lists again.
	SyncErrorExpired = "expired"
	// SyncErrorDecode: a response body the client could not decode.
	SyncErrorDecode = "decode"
	// SyncErrorConnection: the connection was refused, reset or cut, or
	// ended early (EOF).
	SyncErrorConnection = "connection"
	// SyncErrorList and SyncErrorWatch: any other failed list or watch.
	SyncErrorList  = "list_failed"
	SyncErrorWatch = "watch_failed"
)

// EventsRefused counts the Events the API server refused, and that
// were therefore dropped, by reporter (the name given to manager.Manager.EventRecorder) and
// reason (the API server's StatusReason, such as "Invalid" or "Forbidden").
// client-go's broadcaster drops such Events after a log line through klog;
// the manager also logs each through its own logger.
const EventsRefused = "opkit_events_refused_total"

// Leader is 1 while this process may act as the holder of the Lease
// named by its label "name" (its fence is open: see manager.ErrFenced), else 0:
// client-go's and controller-runtime's leader_election_master_status,
// which kubebuilder's dashboards read. Served only with
// manager.Options.LeaderElection.Enabled; summed over the replicas, it is 1 when
// exactly one leads, and unlike client-go's it never reads 1 on two
// replicas at once: a frozen leader's turns 0 before a standby may take
// over.
const Leader = "leader_election_master_status"

// The webhook server's request metrics that /metrics serves, by path in
// the label "webhook": controller-runtime's, from its registry.
const (
	WebhookLatency  = "controller_runtime_webhook_latency_seconds"
	WebhookRequests = "controller_runtime_webhook_requests_total"
	WebhookInFlight = "controller_runtime_webhook_requests_in_flight"
)

// The sharded mode's metrics (manager.Options.Sharding), which
// docs/sharding.md explains. A replica's member metrics are read from its
// membership's Stats at each scrape.
const (
	// ShardingSlotsHeld is the number of slots this replica holds now.
	ShardingSlotsHeld = "opkit_sharding_slots_held"
	// ShardingMembers is the number of live members, this one included,
	// at the last successful round; 0 before the first.
	ShardingMembers = "opkit_sharding_members"
	// ShardingHandovers counts the slots this replica came to hold while
	// another member claimed them.
	ShardingHandovers = "opkit_sharding_handovers_total"
	// ShardingLastTakeover is, for the last handover, the seconds from
	// first wanting the slot to holding it.
	ShardingLastTakeover = "opkit_sharding_last_takeover_seconds"
	// ShardingDispatchSkipped counts, per controller and reason, the keys
	// a worker took and did not reconcile.
	ShardingDispatchSkipped = "opkit_sharding_dispatch_skipped_total"
	// ShardingCacheSetSlotsErrors counts the failed calls of a split
	// cache's SetSlots, each retried with backoff.
	ShardingCacheSetSlotsErrors = "opkit_sharding_cache_set_slots_errors_total"
	// ShardingSlotSync is a histogram of the seconds from this replica
	// coming to hold a slot to its split cache holding the slot's
	// objects and the slot's keys queued: the part of a handover after
	// the takeover (ShardingLastTakeover), while the slot's keys wait.
	ShardingSlotSync = "opkit_sharding_slot_sync_seconds"
	// ShardingQueueWaitP99 is this replica's p99 of the time keys of its
	// sharded controllers waited in their queues, over the autoscaler's
	// last window.
	ShardingQueueWaitP99 = "opkit_sharding_queue_wait_seconds"
	// ShardingRecommendedReplicas is the replica count the deciding
	// replica's autoscaler wants now; 0 on the others.
	ShardingRecommendedReplicas = "opkit_sharding_recommended_replicas"
	// ShardingScales counts, per direction and reason, the scales this
	// replica's autoscaler made.
	ShardingScales = "opkit_sharding_scales_total"
)

// The values of ShardingDispatchSkipped's reason label.
const (
	// SkippedNotHeld: another replica holds the key's slot.
	SkippedNotHeld = "not_held"
	// SkippedSlotUnknown: the key's object is not cached yet; retried.
	SkippedSlotUnknown = "slot_unknown"
	// SkippedSlotUnknownDropped: still unknown after the gate's
	// MaxUnknownRetries.
	SkippedSlotUnknownDropped = "slot_unknown_dropped"
	// SkippedSlotNotCached: the slot is held, but the split cache does
	// not hold its objects yet; retried.
	SkippedSlotNotCached = "slot_not_cached"
	// SkippedFenced: the slot is held, but this replica's last successful
	// renewal is older than the renew deadline; retried.
	SkippedFenced = "fenced"
)

// The API budget's metrics (manager.Options.APIBudget; docs/api-budget.md
// explains the model). Those labelled by lane ("lease", "webhook",
// "reconcile", "informer") and controller name the controller in the
// reconcile lane ("unattributed" for requests sent outside a reconcile)
// and "" in the others.
const (
	// APIBudgetTokens counts the requests let through, by lane and
	// controller.
	APIBudgetTokens = "opkit_api_budget_tokens_total"
	// APIBudgetWait observes, per request that had to wait for a token,
	// the seconds it waited, by lane and controller; its _sum is the
	// seconds throttled.
	APIBudgetWait = "opkit_api_budget_wait_seconds"
	// APIBudgetCanceled counts the requests whose context ended while
	// they waited, by lane and controller: they were never sent.
	APIBudgetCanceled = "opkit_api_budget_canceled_total"
	// APIBudgetPushbacks counts the signals of the server's load, each of
	// which may lower the rate, by lane, controller and reason: "429" (a
	// response with status 429), "retry_after" (a response of another
	// status with a Retry-After header), "latency" (the requests of the
	// last two seconds answered slowly; lane and controller are those of
	// the request whose answer made it).
	APIBudgetPushbacks = "opkit_api_budget_pushbacks_total"
	// APIBudgetRate is the rate in force, in requests a second: the
	// configured rate, or less after the server pushed back; +Inf while
	// no rate applies (no fixed rate, and no pushback yet).
	APIBudgetRate = "opkit_api_budget_rate"
	// APIBudgetConfiguredRate is the configured rate; +Inf for none.
	APIBudgetConfiguredRate = "opkit_api_budget_configured_rate"
	// APIBudgetConcurrency is the limit on requests in flight that the
	// API server's priority-and-fairness 429s set; +Inf for none.
	APIBudgetConcurrency = "opkit_api_budget_concurrency_limit"
)

// The API budgets' metrics of a fleet's member clusters (package fleet,
// Options.APIBudget): the manager's budget's series, one budget per
// member, each labelled by its member (cluster), under names of their own
// so that they can share the manager's registry.
const (
	MemberAPIBudgetTokens         = "opkit_fleet_member_api_budget_tokens_total"
	MemberAPIBudgetWait           = "opkit_fleet_member_api_budget_wait_seconds"
	MemberAPIBudgetCanceled       = "opkit_fleet_member_api_budget_canceled_total"
	MemberAPIBudgetPushbacks      = "opkit_fleet_member_api_budget_pushbacks_total"
	MemberAPIBudgetRate           = "opkit_fleet_member_api_budget_rate"
	MemberAPIBudgetConfiguredRate = "opkit_fleet_member_api_budget_configured_rate"
	MemberAPIBudgetConcurrency    = "opkit_fleet_member_api_budget_concurrency_limit"
)
