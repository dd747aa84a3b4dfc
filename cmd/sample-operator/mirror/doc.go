// Package mirror is the sample operator's controller: it copies the source
// of each Mirror (a ConfigMap or Secret) into every namespace its selector
// matches that accepts the copies, and keeps the copies equal to it.
//
// What it promises:
//
//   - Copies carry the labels LabelMirrorNamespace and LabelMirrorName that
//     name their Mirror; an object without them is never touched.
//   - Copies follow every change of the source; a deleted copy is created
//     again; an edited copy is put back; a copy goes when its namespace
//     stops being a target, when the source goes, and when the Mirror is
//     deleted (Finalizer).
//   - The API server decides: the operator reads a Mirror's source and
//     writes its copies as the Mirror's ServiceAccount
//     (spec.serviceAccountName, default mirror, in the Mirror's namespace;
//     Reconciler.ActAs, manager.Manager.WriterAs), so each of those requests is
//     authorized as it, at the moment it is sent, whatever changed since
//     admission and whether or not any webhook was called. The operator
//     may act as a ServiceAccount only where its namespace's owner let it
//     (impersonate on serviceaccounts, by name); a user may name only a
//     ServiceAccount they may act as themselves (config/policy's
//     service-account policy), and while that policy is missing the
//     operator acts for no Mirror (Policy.IdentityPolicy, reason
//     IdentityUnpinned). A refusal is reported in the Ready condition
//     (SyncFailed), naming the verb and resource refused
//     (TestSourceThatCannotBeFetchedIsReported; test/deployed's
//     TestTenantGetsNothingTheirRBACDenies).
//   - Consent: beside RBAC, a namespace receives copies only where it
//     asked for them (Policy). A target
//     matches the selector and carries AcceptLabel(the Mirror's
//     namespace), "true" or the Mirror's name; kube-* and the operator's
//     own namespace are never targets unless Policy.AllowNamespaces lists
//     them; the Mirror's namespace and terminating ones never are. Targets
//     are checked at every reconcile, and a namespace's label change
//     queues the Mirrors it concerns, so a withdrawn label removes the
//     copy (TestOptOutRemovesTheCopy, TestEmptySelectorCopiesOnlyWhereAccepted).
//   - A source that is a Mirror's copy is copied nowhere (chained copies
//     can loop), nor is a Secret whose type the cluster acts on (bootstrap tokens,
//     service-account tokens, image pull secrets: anything but Opaque,
//     kubernetes.io/tls and Policy.SecretTypes): Ready False, reason
//     SourceRefused, copies deleted.
//   - One Mirror copies into at most Policy.MaxTargets namespaces, the
//     first by name; past it Ready is False with reason TooManyTargets and
//     the copies beyond are deleted (TestFanOutIsCapped).
//   - An object of the source's name that the Mirror does not own is left
//     alone, counted in status.conflicts and the Ready condition (reason
//     Conflict), and its namespace is told by a Warning Event about the
//     object (EventMirrorConflict, naming the Mirror), once per object and
//     Mirror while the process remembers it (TestVictimIsToldAndStatusNamesNoNamespace).
//     An invalid spec is reported in the Ready condition (InvalidSpec) and
//     not retried until the Mirror changes.
//   - The status counts namespaces and never names any but the Mirror's
//     own: its creator may not be allowed to list them, and every
//     namespace counted accepted copies from the Mirror's namespace.
//   - The caches (Store) hold no ConfigMap's or Secret's data: they are
//     cached as metadata only, in two parts, the copies (labelled
//     LabelMirrorName) and every other object, so that their changes
//     trigger reconciles. A source is read in full, as the Mirror's
//     ServiceAccount, at each reconcile of its Mirror, and dropped after
//     it: nothing a tenant makes the operator read outlives the reconcile
//     (at most the workers' count of sources at once). A copy is up to
//     date when it carries the source's digest (AnnotationContentHash)
//     and the resourceVersion this process last wrote or read; a copy it
//     has not seen since it started (after a restart) is fetched once,
//     one at a time, as the ServiceAccount, to compare. Costs: one GET
//     per reconcile of a Mirror, one per copy after a restart
//     (TestOnlySourcesAreFetched). Read-your-writes waits on the copies'
//     informer, the only one that holds what the controller writes. A
//     source that cannot be read (a 403) is reported in the Ready
//     condition (SyncFailed) and retried.
//   - Writes are creates, deletes with a UID and resourceVersion
//     precondition (a copy changed since the cache saw it, perhaps adopted
//     by its namespace's owner, is not deleted:
//     TestAdoptedCopySurvivesAStaleCache), JSON patches that replace a
//     copy's data and carry the resourceVersion read (so that a concurrent
//     change is never overwritten unseen) and answer with metadata only,
//     the finalizer package's guarded JSON patches, and a server-side apply
//     of the whole status (the apply configuration make manifests
//     generates), which only this controller writes. A write's body and
//     answer live only while it is sent: no per-target copy of the data
//     outlives its write. Creates and patches of copies go through
//     WriterAs("mirror", the Mirror's ServiceAccount), the rest through
//     Writer("mirror"), as the operator: status, finalizers, and deletes of
//     copies, which do nothing for anyone, and which a Mirror whose
//     ServiceAccount lost its permissions still needs to be deleted. Both
//     name mirror as the field owner, skip empty patches and applies that
//     would change nothing, count writes in opkit_client_writes_total, and
//     read-your-writes makes each reconcile of a Mirror see the Mirror's
//     own earlier writes.
//
// Its admission webhook (SetupWebhooks; its configuration generated into
// config/webhook/manifests.yaml) answers from the request alone, so that
// a caller who reaches the webhook port, naming any user, learns nothing
// of other objects and costs no API request:
//
//   - Validator: a selector that does not parse is refused on
//     spec.namespaceSelector, a kind other than ConfigMap or Secret on
//     spec.source.kind (the CRD defaults it), and on update a changed
//     spec.source.kind; kubectl warns when an update changes the source.
//   - It reads nothing, lists no namespace and asks the API server
//     nothing: not who the requester is, not whether the source exists or
//     may be copied, not which namespaces accept copies. The controller
//     checks those at every reconcile, and the API server's RBAC decides
//     each read and write (TestForgedCallerLearnsNothing,
//     TestForgedFloodCostsNoAPIRequests).
//   - It refuses an object in another namespace than its request (which
//     only a forged request can send), and hooks v1alpha1 Mirrors only,
//     not their status. There is no defaulting webhook.
//
// Versions: Mirrors are stored as v1alpha1, the version the controller
// reads and writes and the hub of conversion; v1beta1 (spec.from,
// spec.to) is served beside it and converted losslessly (package v1beta1).
// SetupWebhooks serves the conversion.
//
// The reconcile logic (Reconciler) knows nothing of opkit's cache: it reads
// through Store, so the same logic runs on controller-runtime in the
// benchmarks, and without a cluster in TestReconcilerUnit, on a Store over
// cachetest Listers and controller-runtime's fake client. Setup's Store
// itself needs an API server: its metadata-only Listers have no in-memory
// form.
package mirror
