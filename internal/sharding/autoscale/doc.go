// Package autoscale sets a sharded operator's replica count from the load
// its replicas measure, with no metrics pipeline: each replica measures
// itself, publishes the figure in the membership Lease it renews anyway,
// and one replica decides. The manager's ShardingOptions.Autoscale is its
// front.
//
//   - Measuring: a Sampler reads, from the manager's registry, the queue
//     wait histogram, reconcile time, workers and queue depth of the
//     sharded controllers, and turns each window into a Load: the p99
//     queue wait, the mean reconcile, the share of worker time busy. Keys
//     that stay queued with none taken make the p99 at least the time
//     they must have waited, never zero.
//   - Publishing: Recommender.Report is membership.Options.Report, so the
//     Load rides in each renewal (membership.AnnotationReport): no object
//     and no write of its own.
//   - Deciding: only the replica that may dispatch DecidingSlot decides,
//     so two never decide at once, and one fenced stops; a new decider
//     waits a cool-down first. Decide is a pure function of the Policy,
//     the members' Loads, whether slots are moving, and the clock.
//   - Scaling: through the target's scale subresource, written with the
//     resourceVersion just read. A scale-down relies on the Deployment's
//     SIGTERM: the replica leaves gracefully, releasing its slots after
//     their reconciles, as every leave does; so exactly-once dispatch
//     never depends on the autoscaler.
package autoscale
