// Package membership shares slots 0..Slots-1 among the replicas of an
// operator, with coordination.k8s.io Leases as the only coordinator, and
// fences a replica that can no longer prove it is alive.
//
// It knows slot numbers and member identities only: which keys fall in
// which slot is package sharding's business, and dispatching is the
// manager's, which asks MayDispatch before each reconcile and hears of
// slots gained and lost through a Handler.
//
//   - Membership: each Member keeps a Lease of its own, named
//     "<Group>-<Identity>" and labelled LabelGroup=<Group>, renewed every
//     RetryPeriod, with the slots it claims in AnnotationClaims. One list
//     of that label finds every member.
//   - Reports: what Options.Report returns rides along in each renewal, in
//     AnnotationReport; View gives every live member's, and whether any
//     slot was moving, as of the last round. No write of its own.
//   - Liveness: another member is dead when its Lease's resourceVersion
//     has not changed for LeaseDuration on the observer's own clock.
//     Clocks of different processes are never compared. Any member
//     deletes the Lease of a member dead for twice LeaseDuration, on
//     condition that its resourceVersion did not move.
//   - Assignment: Assign, over the live members and the claims in the
//     view: every member holds Slots/N slots or one more; each keeps the
//     slots its claim alone holds up to its share, and the rest go by
//     rendezvous hashing with a 64-bit finaliser (murmur3's fmix64), so a
//     member joining moves only its share, ⌈Slots/N⌉ at most, and one
//     leaving only its own slots.
//   - Claiming: a member writes its claims to its Lease, then lists the
//     group's Leases; a claimed slot becomes held (MayDispatch true) only
//     if no live member also claims it. Of two members claiming a slot
//     neither holds, the higher identity withdraws. A member keeps holding
//     a slot until it releases it.
//   - Releasing: MayDispatch turns false first, then Handler.Release runs
//     until the slot's in-flight reconciles are done, then the claim is
//     removed, and only then can another member hold it.
//   - Fencing: MayDispatch is false whenever the last successful renewal
//     is older than RenewDeadline, from that instant and without waiting
//     for the member's loop, while Holds stays true; after any renewal gap
//     beyond RenewDeadline seen when a round begins (a partition, a frozen
//     process) the member releases everything and rejoins as a newcomer.
//     A renewal sent before the deadline and answered after it opens the
//     fence again, with no Handler call: the slots were held throughout.
//   - Leaving: when Run's context ends the member releases every slot,
//     waits for Handler.Release, and deletes its Lease, so that the others
//     take its slots at their next tick instead of after LeaseDuration.
//
// # The guarantee and its assumptions
//
// While every member is alive, a slot is held by at most one member at any
// instant, by the claim-then-list order alone: that needs only a
// linearizable API server (a list without resourceVersion is a consistent
// read). When a member stops renewing (crash, SIGSTOP, partition), the
// others take its slots no sooner than LeaseDuration after they last saw
// its Lease change, which is after its last successful renewal was sent;
// it stopped dispatching RenewDeadline after that renewal was sent. So
// dispatch never overlaps provided that clocks of the processes run at
// about the same rate and that a reconcile started before the deadline
// ends within LeaseDuration-RenewDeadline (bound reconciles with a
// timeout shorter than that). Writes should still carry resourceVersion
// preconditions: fencing bounds the overlap by these timing assumptions,
// preconditions catch what slips through.
//
// Timings: with the defaults (15 s / 10 s / 2 s, client-go's leader
// election) a crashed member's slots move after about 15–17 s and a
// graceful leave hands over within a tick or two; SHARDING.md's prototype
// ran with 4 s / 3 s / 0.5 s and saw crash recovery in 4.3–5.9 s and
// graceful handover in 0.5–1.4 s.
//
// Each Identity must be unique among live processes; the default adds
// random digits to the host name so a restarted process joins as a new
// member.
package membership
