// Package opkit is a Go SDK for writing Kubernetes operators. This package
// declares nothing; it is the overview of the module's packages.
//
// A manager owns a shared informer cache and starts sources; sources turn
// informer events into keys on work queues; a controller's workers hand
// each key to the user's Reconciler, which reads through the cache's
// Listers and writes through the manager's clients. Across the packages:
//
//   - Shared, not copied: a Lister hands out the cached object itself.
//     Nobody may modify it; tests run with a mutation detector that fails
//     a test that does.
//   - Explicit: a type is cached only once it is registered; reading any
//     other is an error, never a silently started informer.
//   - Level-triggered: a Reconciler is told which key changed, never what
//     changed, so a missed or merged event loses nothing.
//   - One key, one worker: a key is queued at most once and never
//     reconciled by two workers at once; a key added while it is being
//     reconciled is reconciled again afterwards.
//   - Fair: a controller of reconcile.Request keys serves the keys of one
//     priority round-robin across namespaces, and events of initial lists
//     and resyncs wait behind live changes.
//   - Fenced: a leader whose last lease renewal is older than its renew
//     deadline starts no reconcile, and writes sent with a reconcile's
//     context through the manager's clients are refused before they are
//     sent, until it renews.
//   - No globals: metrics go into the registry the manager owns and passes
//     down; nothing registers from init.
//   - Layered: the queue knows nothing of Kubernetes, the cache knows none
//     of its consumers, sources and controllers never import the manager,
//     and nothing under internal/ imports pkg/, so each layer works
//     without the ones above it.
//
// The packages, one concept each:
//
//   - pkg/queue: the generic, de-duplicating, rate-limited priority queue,
//     with aging and optional fairness across tenants.
//   - pkg/cache: the shared informer cache, stripped on ingest, read
//     through typed Listers that do not copy.
//   - pkg/cache/cachetest: Listers over objects in memory, for unit tests
//     of a reconciler without an API server.
//   - pkg/source: informer, channel and periodic events to queue keys,
//     through handlers and typed predicates.
//   - pkg/reconcile: the Reconciler a user writes and the Result it
//     returns, built by constructors.
//   - pkg/controller: the worker pool that runs a Reconciler over a queue;
//     a reconcile reads its own writes: the next reconcile of a key waits,
//     bounded, until the cache holds them.
//   - pkg/manager: builds the clients, cache and metrics registry once and
//     runs everything in order, with leader election, probes, metrics and
//     a thin builder.
//   - pkg/cachedclient: a controller-runtime client.Reader over the cache, which
//     copies what it reads, for ported code and controller-runtime
//     helpers; a writer that applies as the controller's field owner and
//     skips writes that change nothing.
//   - pkg/fleet: one operator across many clusters: members engaged and
//     disengaged at run time by providers, each with a cache and a client
//     of its own, reached from a fleet.Request; queue fairness on the
//     member; kubeconfigs taken only with inline credentials.
//   - pkg/fleet/mcprovider: multicluster-runtime's cluster providers,
//     unchanged, as a fleet's.
//   - pkg/owner: controller owner references built from the scheme.
//   - pkg/finalizer: add and remove a finalizer by guarded patch, and run
//     a cleanup before removal, never modifying the cached object.
//   - pkg/status: patch a status subresource only when it changed.
//   - pkg/conditions: set a status condition with observedGeneration,
//     moving lastTransitionTime only when its status changes.
//   - pkg/webhook: typed defaulting, validating and conversion webhooks on
//     the manager's webhook server.
//   - pkg/webhook/certs: webhook certificates an operator manages itself,
//     without cert-manager.
//   - pkg/webhook/requester: whether the user behind an admission request
//     may do what it asks the operator to do on their behalf.
//   - pkg/sharding: which slot a key belongs to, and the server-side shard
//     selector for a set of slots; in the manager's sharded mode the slots
//     are shared among an operator's replicas through Leases, fencing a
//     replica that cannot prove it is alive, and a replica reconciles a key
//     only while it holds the key's slot.
//   - pkg/crport: controller-runtime code run on opkit while it is ported:
//     a reconciler, map functions, predicates, webhook paths and a legacy
//     Event recorder, as opkit init --from-kubebuilder wires them.
//   - pkg/tracing: OpenTelemetry spans for reconciles and API requests.
//   - pkg/metrics: what opkit's metrics promise (client-go's and
//     controller-runtime's names where they match), and the Prometheus
//     metrics of a queue of your own, recording into a registry passed in.
//   - pkg/testenv: a local control plane for tests and development.
package opkit
