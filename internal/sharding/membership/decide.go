package membership

import (
	"context"
	"slices"
	"time"
)

// decide applies one consistent view of the live peers, read after this
// member's claims were written:
//   - a held slot assigned elsewhere is released;
//   - a slot claimed in that write, assigned here, becomes held if no live
//     peer claims it: any peer that comes to hold it later must have
//     written its claim after this member's, and its own list then sees
//     this claim;
//   - the next claims are the held and releasing slots and those assigned
//     here, except where a live peer of lower identity claims a slot this
//     member does not hold (the tie goes to the lower identity).
func (m *Member) decide(ctx context.Context, peers []peer, leaving bool) {
	now := m.opts.Clock.Now()
	members := []string{m.opts.Identity}
	claimedBy := map[int][]string{}
	for _, p := range peers {
		members = append(members, p.identity)
		for _, s := range p.claims {
			claimedBy[s] = append(claimedBy[s], p.identity)
		}
	}
	cur := m.current(claimedBy)
	from := cur
	if m.meter != nil {
		from = m.anchor.from(cur, members, now, m.opts.LeaseDuration)
	}
	owner := Assign(members, m.opts.Slots, from)
	var loads []float64
	if m.meter != nil {
		reports := map[string]map[int]float64{m.opts.Identity: m.writtenLoad}
		for _, p := range peers {
			reports[p.identity] = p.load
		}
		loads = weights(reports, cur, m.remembered)
		owner = m.balance(owner, from, cur, loads, peers, members, now)
		m.anchor.settle(cur, owner)
	}
	mine := func(s int) bool { return !leaving && owner[s] == m.opts.Identity }

	var lost []int
	for _, s := range m.heldSlots() {
		if !mine(s) {
			lost = append(lost, s)
		}
	}
	m.release(ctx, lost, "reassigned")

	var gained []int
	next := map[int]bool{}
	for s := range m.opts.Slots {
		switch {
		case m.held[s].Load() || m.releasing[s]:
			next[s] = true
		case !mine(s):
			delete(m.wanted, s)
		case m.written[s] && len(claimedBy[s]) == 0:
			if m.meter != nil && loads != nil {
				m.meter.seed(s, loads[s], now)
			}
			m.held[s].Store(true)
			next[s] = true
			gained = append(gained, s)
		default:
			m.want(s, claimedBy[s], now)
			next[s] = !lowerClaims(claimedBy[s], m.opts.Identity)
		}
	}
	m.claims = next
	m.record(len(members), gained, now)
	m.look(peers, owner, now)
	if len(gained) > 0 {
		m.opts.Logger.V(1).Info("Holding slots", "identity", m.opts.Identity, "slots", gained)
		m.opts.Handler.Held(gained)
	}
}

// balance returns owner (from Assign) balanced on the planner's plan
// (AnnotationPlan), and, when this member is the planner, updates the
// plan it writes next from loads (this member's view of every slot's
// load): the plan is set when there is none, once the loads have been
// busy for a whole half-life (a rate read sooner holds too few of each
// slot's reconciles, in the order the queue served them: a burst's
// early keys, not its mix), and renewed only while the slots
// rest (every slot claimed once, and the plan's assignment keeps them
// all) and loads have found the busiest member more than
// DefaultBalanceTrigger over the mean for a whole half-life. A burst
// shorter than that (its keys served in an order of their own, each
// member's busiest slots early or late) moves nothing while it lasts;
// what it leaves uneven once its work is in the rates moves a half-life
// on. Each member balances on the plan as last written, which all of
// them read alike a renewal later. A member that becomes the planner
// (the planner died, left, or a member of lower identity joined) carries
// on the plan it last read, as do the others until its Lease holds it:
// a new planner that planned afresh from its own view would have every
// member aim elsewhere while a takeover lands. It balances from the
// holders in from (see anchor.from); cur is the claims in this view.
func (m *Member) balance(owner, from, cur []string, loads []float64, peers []peer, members []string, now time.Time) []string {
	planner := slices.Min(members)
	var plan []float64
	for _, p := range peers {
		if p.plan != nil && (p.identity == planner || plan == nil) {
			plan = p.plan
		}
	}
	if plan != nil {
		m.heardPlan = plan
	}
	if planner == m.opts.Identity {
		plan = m.writtenPlan
		if plan == nil && m.plan == nil {
			m.plan, plan = m.heardPlan, m.heardPlan
		}
	} else {
		m.plan = nil
		plan = m.heardPlan
	}
	balanced := owner
	if plan != nil && busy(plan, len(members)) {
		balanced = BalanceFrom(owner, from, plan, DefaultBalanceTolerance)
	}
	if loads == nil || !busy(loads, len(members)) {
		m.busySince = time.Time{}
	} else if m.busySince.IsZero() {
		m.busySince = now
	}
	settled := !m.busySince.IsZero() && now.Sub(m.busySince) >= m.meter.halfLife
	if planner == m.opts.Identity && settled {
		resting := slices.Equal(balanced, cur)
		uneven := m.uneven.lasted(Uneven(balanced, loads, DefaultBalanceTrigger), now) >= m.meter.halfLife
		if m.plan == nil || resting && uneven {
			m.plan = loads
			m.uneven = sustained{}
		}
	} else {
		m.uneven = sustained{}
	}
	return balanced
}

// anchor is, with balancing by load, the assignment that a change of
// members is assigned and balanced from until it has landed: the claims
// as they last were with every slot claimed once and nothing left to
// move. Balanced from the claims of each view instead, a change is aimed
// anew as it lands: a dead member's slots that have landed count as in
// place, the count assignment puts those still unclaimed elsewhere, and
// balancing picks other swaps, moving slots that had just moved, and
// survivors' own slots, within the takeover. From the anchor, every
// round of the change, on every member, aims at one target.
type anchor struct {
	owner []string  // nil until a view with every slot claimed once
	since time.Time // when this member saw the change begin; zero if none
}

// from returns what decide assigns and balances from: cur, except while
// the members are not those holding the anchor's slots (a member died,
// left or joined), when it is the anchor with the slots of members gone
// blanked. A member's first view with every slot claimed once (a
// joiner's: the group before it) becomes its anchor. A change that has
// not landed within limit, on now, is given up (members whose anchors
// differ, as a joiner's can when the group was mid-move, may aim at
// different targets): from then on, cur, until the claims come to rest
// again. A second change during the first blanks its slots too.
func (a *anchor) from(cur, members []string, now time.Time, limit time.Duration) []string {
	if a.owner == nil {
		if !slices.Contains(cur, "") {
			a.owner = slices.Clone(cur)
		}
		return cur
	}
	holders := slices.Compact(slices.Sorted(slices.Values(a.owner)))
	live := slices.Sorted(slices.Values(members))
	if slices.Equal(holders, live) {
		a.since = time.Time{}
		return cur
	}
	if a.since.IsZero() {
		a.since = now
	}
	if now.Sub(a.since) > limit {
		*a = anchor{}
		return cur
	}
	out := slices.Clone(a.owner)
	for s, o := range out {
		if _, ok := slices.BinarySearch(live, o); !ok {
			out[s] = ""
		}
	}
	return out
}

// settle makes cur the anchor when it has landed where decide aims,
// owner, with every slot claimed once: at rest, or at the end of a
// change.
func (a *anchor) settle(cur, owner []string) {
	if !slices.Contains(cur, "") && slices.Equal(cur, owner) {
		a.owner, a.since = slices.Clone(cur), time.Time{}
	}
}

// sustained times how long a condition has held.
type sustained struct{ since time.Time }

// lasted returns how long the condition, which holds now or not, has
// held since it last became true; 0 when it does not hold now.
func (c *sustained) lasted(holds bool, now time.Time) time.Duration {
	switch {
	case !holds:
		c.since = time.Time{}
		return 0
	case c.since.IsZero():
		c.since = now
	}
	return now.Sub(c.since)
}

// current returns, for Assign, the member whose claim alone holds each
// slot in this view: a peer's by claimedBy, this member's by the claims
// it last wrote (as its peers read them); "" where no claim or several
// do.
func (m *Member) current(claimedBy map[int][]string) []string {
	cur := make([]string, m.opts.Slots)
	for s := range cur {
		claimers := claimedBy[s]
		if m.written[s] {
			claimers = append(slices.Clip(claimers), m.opts.Identity)
		}
		if len(claimers) == 1 {
			cur[s] = claimers[0]
		}
	}
	return cur
}

// want notes when this member first wanted slot s and whether it was
// claimed then, for Stats.
func (m *Member) want(s int, claimers []string, now time.Time) {
	if _, ok := m.wanted[s]; !ok {
		m.wanted[s] = wanting{since: now, contested: len(claimers) > 0}
	}
}

// record updates Stats after a round.
func (m *Member) record(members int, gained []int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Members = members
	for _, s := range gained {
		w, ok := m.wanted[s]
		delete(m.wanted, s)
		if ok && w.contested {
			m.stats.Handovers++
			m.stats.LastTakeover = now.Sub(w.since)
		}
	}
}

// lowerClaims reports whether an identity lower than self is among
// claimers.
func lowerClaims(claimers []string, self string) bool {
	for _, c := range claimers {
		if c < self {
			return true
		}
	}
	return false
}

// View is what a member saw in its last successful round.
type View struct {
	// Reports holds, for each live member, this one included, by
	// identity, its AnnotationReport as last read (this member's as last
	// written); "" where it has none.
	Reports map[string]string
	// Settled is true when no slot was moving: every live member claimed
	// exactly the slots Assign gives it, and this member held exactly its
	// own and was releasing none.
	Settled bool
	// At is when the round decided, on Options.Clock; zero before the
	// first round.
	At time.Time
}

// View returns what this member saw in its last successful round. It is
// safe for concurrent use.
func (m *Member) View() View {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}

// look records the round's View.
func (m *Member) look(peers []peer, owner []string, now time.Time) {
	v := View{Reports: map[string]string{m.opts.Identity: m.lease.Annotations[AnnotationReport]}, At: now}
	v.Settled = len(m.releasing) == 0 && sameSlots(m.heldSlots(), owner, m.opts.Identity)
	for _, p := range peers {
		v.Reports[p.identity] = p.report
		v.Settled = v.Settled && p.err == nil && sameSlots(p.claims, owner, p.identity)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.view = v
}

// sameSlots reports whether slots are exactly those owner gives id.
func sameSlots(slots []int, owner []string, id string) bool {
	n := 0
	for _, o := range owner {
		if o == id {
			n++
		}
	}
	if len(slots) != n {
		return false
	}
	for _, s := range slots {
		if s < 0 || s >= len(owner) || owner[s] != id {
			return false
		}
	}
	return true
}
