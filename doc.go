// Package opkit is a Go SDK for writing Kubernetes operators.
//
// An operator built on opkit is a Manager that owns a shared informer cache
// and starts Sources. Sources turn informer events into keys on rate-limited,
// de-duplicating work queues; Reconciler workers drain the queues and read
// cluster state through typed Listers that hand out cached objects without
// copying them. Operators run as in-cluster pods and are tested against a real
// kube-apiserver and etcd started by package testenv.
//
// Each layer is a package of its own, usable without the others:
//
//   - pkg/queue: the generic, fair, priority work queue with aging.
//   - pkg/cache: the shared informer cache, stripped on ingest, read through
//     typed Listers that do not copy.
//   - pkg/source: informer events to queue keys, through handlers and
//     typed predicates; initial lists and resyncs at low priority.
//   - pkg/reconcile: the Reconciler a user writes and the Result it returns.
//   - pkg/controller: the worker pool that runs a Reconciler over a queue.
//   - pkg/manager: builds the clients, cache and metrics registry once and
//     runs everything in order, with leader election, probes, metrics and a
//     thin builder.
//   - pkg/metrics: Prometheus metrics with client-go's and
//     controller-runtime's names, recording into a registry passed in.
//   - pkg/finalizer: add and remove a finalizer by guarded patch, and run
//     cleanup before removal, never modifying the cached object.
//   - pkg/conditions: set a status condition with observedGeneration,
//     moving lastTransitionTime only when its status changes.
//   - pkg/status: patch a status subresource only when it changed.
//   - pkg/cachedclient: a controller-runtime client.Reader over the cache,
//     which copies what it reads, for ported code and controller-runtime
//     helpers (Listers stay the zero-copy fast path); Manager.CachedClient
//     joins it with the writing client, and Manager.Writer wraps that for
//     one controller.
//   - pkg/owner: controller owner references built from the scheme; the
//     cache's Lister.ControlledBy lists an owner's children.
//   - pkg/cache/cachetest: in-memory Listers, for unit tests of a
//     reconciler without an API server.
//   - pkg/testenv: a local control plane for tests and development.
package opkit
