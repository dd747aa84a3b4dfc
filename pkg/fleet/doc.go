// Package fleet reconciles across many clusters from one operator: a Fleet
// engages member clusters at run time, as Providers find them, and gives
// each a cache, clients and writers of its own; controllers keyed by Request (a
// reconcile.Request and the member it is in) watch a type in every member
// with one Source and reach the member's Listers and client from the
// request.
//
// Its contract:
//
//   - Engaged at run time: a Provider engages a member with a context and
//     disengages it by ending that context. A member disengaged releases
//     everything it held: its informers stop, its cached objects are freed
//     and the Sources' handlers on it detach. Engaging a name again
//     replaces the member.
//   - Never blocked by a member: Engage returns at once, without waiting
//     for the member's caches to sync; Fleet.Cluster answers ErrNotEngaged
//     at once for a member not engaged; a Watch never waits for any
//     member's sync before its controller starts; a member whose API server
//     is unreachable delays only its own keys.
//   - Unreachable members reported and set aside: Options.ProbeInterval is
//     the fleet's watch timeout. A member whose API server stops answering
//     its /readyz is reported (Cluster.Health, Health.Condition,
//     MetricMemberReachable) within the interval plus the probe's timeout
//     (the interval, at most 5s); its keys are requeued, reconciles in
//     flight on it end (ErrUnreachable) and its client fails at once until
//     it answers again. Readiness does not depend on members.
//   - Exactly the member's: a request is reconciled with the Cluster it
//     names (ClusterFrom), whose context ends when the member is
//     disengaged; a key queued by a member since disengaged is dropped, not
//     retried. A member confined to a namespace (Member.Namespace) caches and
//     writes that namespace only, through every client it hands out.
//   - Written per member: a member's Writer (per controller) and
//     CachedClient read its cache, skip the writes that would change
//     nothing by what its cache holds, and record their writes for
//     read-your-writes against its cache; its WriterAs acts as a user on
//     the member's API server, whose RBAC decides. A member disengaged
//     keeps no writer, and its clients, wherever they were kept, send it
//     nothing more: each request is refused with ErrNotEngaged.
//   - Budgeted per member: each member has an API budget of its own
//     (Options.APIBudget), which every request to it goes through, by lane:
//     the probes of its /readyz never wait, then Requesters' reviews, then
//     reconciles by controller, then its cache's lists and watches. A 429
//     from a member slows that member only; its budget is released when it
//     is disengaged.
//   - Checked per member: each member's cache has the mutation detector
//     and the check of unregistered reads (Options.Mutations,
//     Options.UnregisteredReads), and their reports name the member.
//   - Fair across members: Request.Tenant keys the controller queue's
//     fairness on the member, so a member with a flood of events delays
//     another member's key by at most one key. With Request.NamespaceTenant
//     as the Tenant and TenantMember as the TenantGroup, fairness has two
//     levels: members, then each member's namespaces.
//   - Webhooks per member: RegisterWebhooks serves a type's admission
//     webhooks at a path per member (MemberPath), with the member in the
//     context (ClusterFrom); a member not engaged, or a name that is not a
//     member's, is denied with 403 under either failurePolicy; with
//     WebhookOptions.Callers, so is a caller that is not the member's API
//     server. Requesters checks a requester against the RBAC of the member
//     in the context only, never the hub's, holding at most
//     requester.Options.CacheSize answers per engaged member.
//   - One owner per member, on every path (Options.Sharding): replicas
//     share the members out by Lease slots, and a replica engages only
//     the members of the slots it holds. Fleet.Cluster, Lister.In and
//     Reconciler refuse another replica's member at once (ErrNotOwned),
//     and a member's client refuses writes as soon as this replica's
//     last renewal is older than the renew deadline, before any other
//     replica may take the member. A slot is given up only once its
//     members' reconciles in flight have returned.
//   - Safe kubeconfigs: KubeconfigSecrets accepts only kubeconfigs whose
//     credentials are inline; one that names a file, runs a command or
//     calls an auth provider is refused, so that whoever writes the Secret
//     cannot make the operator read its own files (its ServiceAccount
//     token) or run programs. ClusterProfiles runs only the credential
//     plugins the operator's own access configuration names, never one a
//     profile names.
//
// Providers here: Namespaces (the namespaces of one API server as members,
// for tests and scale runs), KubeconfigSecrets (a kubeconfig in a Secret
// on the hub per member) and ClusterProfiles (the SIG-Multicluster cluster
// inventory's ClusterProfiles on the hub); package mcprovider runs multicluster-runtime's
// providers as a fleet's.
package fleet
