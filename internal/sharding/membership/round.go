package membership

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// round is one tick: fence after a renewal gap, write the claims to the
// Lease, list the group's Leases, then decide what to hold, release and
// claim next. A leaving member claims nothing new and holds nothing.
func (m *Member) round(ctx context.Context, leaving bool) {
	log := m.opts.Logger.WithValues("group", m.opts.Group, "identity", m.opts.Identity)
	sent := m.opts.Clock.Now()
	if last := m.lastRenew.Load(); last != nil && sent.Sub(*last) >= m.opts.RenewDeadline {
		m.fence(ctx, sent.Sub(*last))
	}
	if err := m.renew(ctx, sent); err != nil {
		log.Info("Renewing the member Lease failed", "error", err.Error())
		return
	}
	m.lastRenew.Store(&sent)
	peers, err := m.list(ctx)
	if err != nil {
		log.Info("Listing the group's Leases failed", "error", err.Error())
		return
	}
	now := m.opts.Clock.Now()
	m.decide(ctx, m.live(peers, now), leaving)
	m.collect(ctx, peers, now)
}

// collect deletes the Leases of members dead for twice LeaseDuration, so
// that crashed processes (each a new identity) do not pile up. The delete
// is conditional on the resourceVersion seen, so a member that renewed
// meanwhile keeps its Lease; one deleted while partitioned has fenced
// itself and creates its Lease again when it comes back.
func (m *Member) collect(ctx context.Context, peers []peer, now time.Time) {
	for _, p := range peers {
		s := m.seen[p.identity]
		if now.Sub(s.since) < 2*m.opts.LeaseDuration {
			continue
		}
		err := m.leases.Delete(ctx, p.lease, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &s.rv}})
		if err == nil {
			m.opts.Logger.Info("Deleted a dead member's Lease", "identity", m.opts.Identity, "dead", p.identity)
		}
	}
}

// fence drops every claim after a renewal gap beyond RenewDeadline: others
// may have declared this member dead and taken its slots, so it must
// rejoin as a newcomer. MayDispatch was already false for the whole gap.
func (m *Member) fence(ctx context.Context, gap time.Duration) {
	if held := m.heldSlots(); len(held) > 0 || len(m.claims) > len(m.releasing) {
		m.opts.Logger.Info("Renewal gap beyond the renew deadline; dropping all claims and rejoining",
			"identity", m.opts.Identity, "gap", gap.String(), "renewDeadline", m.opts.RenewDeadline.String(), "held", held)
		m.release(ctx, held, "fenced")
	}
	m.claims = maps.Clone(m.releasing)
	clear(m.wanted)
	m.anchor = anchor{}
}

// renew writes the claims to this member's Lease, creating it if needed.
func (m *Member) renew(ctx context.Context, now time.Time) error {
	l := m.lease
	if l == nil {
		l = newLease(m.opts)
	} else {
		l = l.DeepCopy()
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationClaims] = formatClaims(slices.Collect(maps.Keys(m.claims)))
	if m.opts.Report != nil {
		l.Annotations[AnnotationReport] = m.opts.Report()
	}
	if m.meter != nil {
		held := m.heldSlots()
		m.meter.keep(held)
		l.Annotations[AnnotationLoad] = m.meter.format(held, now)
		if m.plan != nil {
			l.Annotations[AnnotationPlan] = formatPlan(m.plan)
		} else {
			delete(l.Annotations, AnnotationPlan)
		}
	}
	secs := int32((m.opts.LeaseDuration + time.Second - 1) / time.Second)
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	var out *coordinationv1.Lease
	var err error
	if l.ResourceVersion == "" {
		out, err = m.leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		out, err = m.leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		m.recover(ctx, err)
		return fmt.Errorf("membership: renew Lease %s/%s: %w", m.opts.Namespace, l.Name, err)
	}
	m.lease = out
	m.written = maps.Clone(m.claims)
	m.writtenLoad, _ = parseLoad(out.Annotations[AnnotationLoad], m.opts.Slots)
	m.writtenPlan, _ = parsePlan(out.Annotations[AnnotationPlan], m.opts.Slots)
	return nil
}

// recover prepares the next renewal after a failed write: a Lease that
// exists or changed is read again, a deleted one created again.
func (m *Member) recover(ctx context.Context, err error) {
	switch {
	case apierrors.IsNotFound(err):
		m.lease = nil
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		if l, gerr := m.leases.Get(ctx, leaseName(m.opts.Group, m.opts.Identity), metav1.GetOptions{}); gerr == nil {
			m.lease = l
		}
	}
}

// list reads the other members' Leases. A list without a resourceVersion
// is a consistent read, so it sees every claim written before it.
func (m *Member) list(ctx context.Context) ([]peer, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelGroup: m.opts.Group}).String()
	ls, err := m.leases.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("membership: list Leases %s in %s: %w", sel, m.opts.Namespace, err)
	}
	var peers []peer
	for i := range ls.Items {
		p, ok := peerOf(&ls.Items[i], m.opts.Slots)
		if p.err != nil {
			m.opts.Logger.Info("A member's claims do not parse", "identity", m.opts.Identity, "error", p.err.Error())
		}
		if p.loadErr != nil {
			m.opts.Logger.Info("A member's loads do not parse", "identity", m.opts.Identity, "error", p.loadErr.Error())
		}
		if ok && p.identity != m.opts.Identity {
			peers = append(peers, p)
		}
	}
	return peers, nil
}

// live returns the peers whose Lease changed within LeaseDuration on this
// member's clock. Clocks of other processes are never read: a Lease's
// renewTime is not compared, only whether its resourceVersion moved.
func (m *Member) live(peers []peer, now time.Time) []peer {
	listed := map[string]bool{}
	var out []peer
	for _, p := range peers {
		listed[p.identity] = true
		s, ok := m.seen[p.identity]
		if !ok || s.rv != p.resourceVersion {
			s = sighting{rv: p.resourceVersion, since: now}
			m.seen[p.identity] = s
		}
		if now.Sub(s.since) < m.opts.LeaseDuration {
			out = append(out, p)
		}
	}
	maps.DeleteFunc(m.seen, func(id string, _ sighting) bool { return !listed[id] })
	return out
}
