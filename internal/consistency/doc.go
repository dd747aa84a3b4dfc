// Package consistency is the plumbing of read-your-writes, which
// pkg/controller's package doc states as a contract: the manager's
// clients record writes (NewClient), and a controller holds a key's next
// reconcile until the cache has caught up with them (Writes, PerKey).
// Only opkit's controller and manager use it.
//
// Read-your-writes makes reconciles read their own writes: after a
// reconcile writes an object through the manager's client, the next
// reconcile of the same key does not act on a cached copy older than that
// write. It is on by default (a negative
// controller.Options.ReadYourWritesTimeout turns it off); controller-runtime has it as an experimental option, off
// by default and wrong for caches of several namespaces.
//
// The classic bug it removes: a reconciler lists an object's children from
// the cache, finds none and creates one with generateName; a burst of
// events reconciles the key again before the informer has delivered the
// child, the list is still empty, and a second child is created. With
// read-your-writes the second reconcile first waits for the cache to hold
// the child (TestStaleCacheCreatesNoDuplicateChild shows zero duplicates
// in 200 bursts with it on, and duplicates with it off, in one run).
//
// # How it works
//
//   - Recording: the manager's clients (Client, CachedClient and the
//     writers Writer returns) are made with NewClient. Each
//     successful create, update, patch, apply and delete, status and other
//     subresources included, made with the context of a reconcile, is
//     recorded in the reconcile's Writes (FromContext) as a cacheaccess.Write:
//     the resourceVersion the API server returned, or for a delete the
//     object deleted. Writes outside a reconcile are not recorded, and cost
//     nothing.
//   - Waiting: before the next reconcile of the same key, the controller
//     waits until every informer that would hold each written object has
//     caught up: its store has reached the write's resourceVersion (the
//     versions Kubernetes 1.35 made comparable), or holds the object at
//     that version or newer; for a delete, no longer holds it. The wait
//     wakes on the stores' changes, not on a poll; a reconcile triggered
//     by the write's own event finds the cache caught up and does not
//     wait at all.
//   - Holding no worker: a key that must wait is parked: its worker lets
//     it go at once and takes the next key, and the key is queued again,
//     with the priority it had, when the cache has caught up or the wait
//     has timed out (TestWaitHoldsNoWorker). Queued again meanwhile, it
//     stays parked. So a watch that lags under a flood of writes delays
//     only the keys that wrote, and the workers go on with every other
//     key.
//   - Bounded: the wait lasts at most controller.Options.ReadYourWritesTimeout
//     (default 5s); then the reconcile runs with what the cache holds, and
//     the wait is counted as a timeout, so a lagging or broken watch
//     delays reconciles but never stops them. Waits are observed in
//     opkit_controller_read_your_writes_wait_seconds{controller,result}
//     (metrics.ReadYourWritesWait), result "caught_up", "timeout" or
//     "canceled".
//   - Every cache shape: a write is waited for in every registration of
//     its kind, in any form (typed, metadata, unstructured), that would
//     hold it: in a cache of several namespaces, the informer of the
//     object's own namespace, whose resourceVersion says nothing of the
//     others' (TestWrittenIsPerNamespaceInformer). A registration whose
//     label selector the object does not match, or whose namespaces do not
//     include the object's, never holds it and is not waited for; nor is
//     one with a field selector on fields other than metadata.name and
//     metadata.namespace, which the cache cannot evaluate.
//   - The reconcile's time (controller_runtime_reconcile_time_seconds)
//     does not include the wait.
//
// # Limits
//
//   - Only the key that wrote waits. A reconcile of another key reads what
//     the cache holds, as on controller-runtime and client-go; a key whose
//     reconcile should see another's writes is usually triggered by the
//     write's own event, which arrives after the cache has it.
//   - Only writes through a client of NewClient are recorded. A write
//     through another client (a clientset, a dynamic client) is recorded
//     with controller.RecordWrite(ctx, c, gvk, obj, false), which
//     adds it to FromContext(ctx).
//   - DeleteAllOf and subresource creates (an eviction, a token request)
//     are not recorded: their responses carry no version of the objects
//     they change.
package consistency
