package membership

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys of a member's Lease. Members of a group find each other by listing
// Leases with LabelGroup; the slots a member claims are in AnnotationClaims
// as ascending decimal numbers joined by commas; what Options.Report
// returns is in AnnotationReport.
const (
	LabelGroup       = "sharding.opkit.dev/group"
	AnnotationClaims = "sharding.opkit.dev/claims"
	AnnotationReport = "sharding.opkit.dev/report"
)

// newLease is a member's Lease before its first renewal.
func newLease(o Options) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      leaseName(o.Group, o.Identity),
			Namespace: o.Namespace,
			Labels:    map[string]string{LabelGroup: o.Group},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &o.Identity},
	}
}

// formatClaims writes slots for AnnotationClaims.
func formatClaims(slots []int) string {
	s := slices.Sorted(slices.Values(slots))
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// parseClaims reads AnnotationClaims. Claims outside 0..slots-1 (a member
// configured with more Slots) cannot conflict with this member's and are
// left out; a value that does not parse is an error.
func parseClaims(v string, slots int) ([]int, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("parse claim %q: %w", p, err)
		}
		if n >= 0 && n < slots {
			out = append(out, n)
		}
	}
	return out, nil
}

// peer is another member as one list saw it.
type peer struct {
	lease           string // the Lease's name
	identity        string
	resourceVersion string
	claims          []int
	report          string          // AnnotationReport
	load            map[int]float64 // AnnotationLoad; nil if none or unreadable
	plan            []float64       // AnnotationPlan; nil if none or unreadable
	// err says why claims is every slot: the annotation did not parse, so
	// the peer might claim any of them.
	err error
	// loadErr says why load is nil though the annotation is set.
	loadErr error
}

// peerOf reads a listed Lease; ok is false for one that is not a member's.
func peerOf(l *coordinationv1.Lease, slots int) (p peer, ok bool) {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return peer{}, false
	}
	p = peer{lease: l.Name, identity: *l.Spec.HolderIdentity, resourceVersion: l.ResourceVersion}
	p.report = l.Annotations[AnnotationReport]
	p.load, p.loadErr = parseLoad(l.Annotations[AnnotationLoad], slots)
	var planErr error
	p.plan, planErr = parsePlan(l.Annotations[AnnotationPlan], slots)
	if err := errors.Join(p.loadErr, planErr); err != nil {
		p.loadErr = fmt.Errorf("read Lease %s/%s: %w: ignoring its loads", l.Namespace, l.Name, err)
	}
	p.claims, p.err = parseClaims(l.Annotations[AnnotationClaims], slots)
	if p.err != nil {
		p.err = fmt.Errorf("read Lease %s/%s: %w: taking it to claim every slot", l.Namespace, l.Name, p.err)
		p.claims = make([]int, slots)
		for i := range p.claims {
			p.claims[i] = i
		}
	}
	return p, true
}

func deleteExactly(l *coordinationv1.Lease) metav1.DeleteOptions {
	rv := l.ResourceVersion
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}
}

func isGone(err error) bool { return apierrors.IsNotFound(err) }
