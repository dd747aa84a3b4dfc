package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// claims returns, from the group's Leases, who claims each slot; a slot
// claimed by two (mid-move) maps to "2".
func claims(ctx context.Context, cs kubernetes.Interface, group string) (map[int]string, error) {
	return claimsExcept(ctx, cs, group, "")
}

// claimedBy returns the slots the group's Lease named lease claims.
func claimedBy(ctx context.Context, cs kubernetes.Interface, group, lease string) ([]int, error) {
	all, err := claims(ctx, cs, group)
	if err != nil {
		return nil, err
	}
	var out []int
	for s, l := range all {
		if l == lease {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the Lease %s claims no slot", lease)
	}
	slices.Sort(out)
	return out, nil
}

// waitClaimedElsewhere waits until each of slots is claimed by one Lease
// of the group other than lease (a killed replica's, whose claims stay
// until its Lease is collected), polling the Leases, and returns when
// they first were.
func waitClaimedElsewhere(ctx context.Context, cs kubernetes.Interface, group, lease string, slots []int, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		cur, err := claimsExcept(ctx, cs, group, lease)
		left := 0
		for _, s := range slots {
			if o := cur[s]; o == "" || o == "2" {
				left++
			}
		}
		if err == nil && left == 0 {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the survivors do not claim the %d slots of %s within %v (last: %d unclaimed or contested, %v)", len(slots), lease, timeout, left, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// claimsExcept is claims, leaving out the Lease named skip.
func claimsExcept(ctx context.Context, cs kubernetes.Interface, group, skip string) (map[int]string, error) {
	ls, err := cs.CoordinationV1().Leases(leaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: membership.LabelGroup + "=" + group})
	if err != nil {
		return nil, fmt.Errorf("list the Leases of group %s: %w", group, err)
	}
	out := map[int]string{}
	for _, l := range ls.Items {
		v := l.Annotations[membership.AnnotationClaims]
		if v == "" || l.Name == skip {
			continue
		}
		for _, p := range strings.Split(v, ",") {
			s, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("claims %q of Lease %s: %w", v, l.Name, err)
			}
			if _, ok := out[s]; ok {
				out[s] = "2"
			} else {
				out[s] = l.Name
			}
		}
	}
	return out, nil
}

// restingClaims waits until the replicas have settled, every slot is
// claimed by one Lease, and no claim has changed for quiet, and returns
// the claims then.
func restingClaims(ctx context.Context, cs kubernetes.Interface, group string, rs []*replica, quiet, timeout time.Duration) (map[int]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last map[int]string
	since := time.Now()
	for {
		cur, err := claims(ctx, cs, group)
		if err == nil {
			err = settled(ctx, rs, slots)
		}
		if err == nil && len(cur) == slots && !slices.Contains(slices.Collect(maps.Values(cur)), "2") {
			if !maps.Equal(cur, last) {
				last, since = cur, time.Now()
			} else if time.Since(since) >= quiet {
				return cur, nil
			}
		} else {
			last = nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the slots did not come to rest within %v (last: %v)", timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// groupPlan returns the loads, one per slot, in the plan of the group's
// planner (membership.AnnotationPlan, in the Lease of lowest name that
// holds one); nil when no Lease holds a plan.
func groupPlan(ctx context.Context, cs kubernetes.Interface, group string) ([]float64, error) {
	ls, err := groupLeases(ctx, cs, group)
	if err != nil {
		return nil, err
	}
	return planOf(ls)
}

// planOf returns the plan groupPlan reads, from the group's Leases ls in
// order of name.
func planOf(ls []coordinationv1.Lease) ([]float64, error) {
	for _, l := range ls {
		if v := l.Annotations[membership.AnnotationPlan]; v != "" {
			byslot, err := parseLoads(v)
			if err != nil {
				return nil, fmt.Errorf("plan of Lease %s: %w", l.Name, err)
			}
			plan := make([]float64, slots)
			for s, w := range byslot {
				plan[s] = w
			}
			return plan, nil
		}
	}
	return nil, nil
}

// balancePending reports whether the group's replicas have balancing
// left to do: the planner's plan (membership.AnnotationPlan) swaps slots
// of the assignment they claim, which they will carry out a renewal
// later; or, on the loads each reports for the slots it claims
// (membership.AnnotationLoad), which the planner plans on, they are busy
// enough to balance (membership.MinBusy) and either the planner has yet
// to make its first plan (it waits for a half-life of busy loads) or the
// busiest is more than membership.DefaultBalanceTrigger over the mean,
// so the planner will renew its plan.
func balancePending(ctx context.Context, cs kubernetes.Interface, group string) (bool, error) {
	ls, err := groupLeases(ctx, cs, group)
	if err != nil {
		return false, err
	}
	plan, err := planOf(ls)
	if err != nil {
		return false, err
	}
	owner, loads := make([]string, slots), make([]float64, slots)
	members := 0
	for _, l := range ls {
		v := l.Annotations[membership.AnnotationClaims]
		if v == "" {
			continue
		}
		members++
		reported, err := parseLoads(l.Annotations[membership.AnnotationLoad])
		if err != nil {
			return false, fmt.Errorf("loads of Lease %s: %w", l.Name, err)
		}
		for _, p := range strings.Split(v, ",") {
			if s, err := strconv.Atoi(p); err == nil && s >= 0 && s < slots {
				owner[s], loads[s] = l.Name, reported[s]
			}
		}
	}
	if members == 0 {
		return false, nil
	}
	if plan != nil && busy(plan, members) && !slices.Equal(membership.Balance(owner, plan, membership.DefaultBalanceTolerance), owner) {
		return true, nil
	}
	return busy(loads, members) && (plan == nil || membership.Uneven(owner, loads, membership.DefaultBalanceTrigger)), nil
}

// busy reports whether loads keep members busy enough to balance on
// (membership.MinBusy).
func busy(loads []float64, members int) bool {
	total := 0.0
	for _, w := range loads {
		total += w
	}
	return total/float64(members) >= membership.MinBusy
}

// groupLeases returns the Leases of group, by name.
func groupLeases(ctx context.Context, cs kubernetes.Interface, group string) ([]coordinationv1.Lease, error) {
	ls, err := cs.CoordinationV1().Leases(leaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: membership.LabelGroup + "=" + group})
	if err != nil {
		return nil, fmt.Errorf("list the Leases of group %s: %w", group, err)
	}
	slices.SortFunc(ls.Items, func(a, b coordinationv1.Lease) int { return strings.Compare(a.Name, b.Name) })
	return ls.Items, nil
}

// parseLoads reads "slot=load" pairs joined by commas, as
// membership.AnnotationLoad and AnnotationPlan hold them; slots outside
// the replicas' are an error.
func parseLoads(v string) (map[int]float64, error) {
	out := map[int]float64{}
	if v == "" {
		return out, nil
	}
	for _, p := range strings.Split(v, ",") {
		k, w, _ := strings.Cut(p, "=")
		s, err := strconv.Atoi(k)
		load, err2 := strconv.ParseFloat(w, 64)
		if err != nil || err2 != nil || s < 0 || s >= slots {
			return nil, fmt.Errorf("%q: want slot=load pairs of slots 0 to %d", v, slots-1)
		}
		out[s] = load
	}
	return out, nil
}

// busiestShare returns the largest share of weights, one per slot, that
// one holder in owner holds; 0 when the weights add up to nothing.
func busiestShare(owner map[int]string, weights []float64) float64 {
	total, by := 0.0, map[string]float64{}
	for s, w := range weights {
		total += w
		by[owner[s]] += w
	}
	if !(total > 0) {
		return 0
	}
	return slices.Max(slices.Collect(maps.Values(by))) / total
}
