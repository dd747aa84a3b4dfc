package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// claims returns, from the group's Leases, who claims each slot; a slot
// claimed by two (mid-move) maps to "2".
func claims(ctx context.Context, cs kubernetes.Interface, group string) (map[int]string, error) {
	ls, err := cs.CoordinationV1().Leases(leaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: membership.LabelGroup + "=" + group})
	if err != nil {
		return nil, fmt.Errorf("list the Leases of group %s: %w", group, err)
	}
	out := map[int]string{}
	for _, l := range ls.Items {
		v := l.Annotations[membership.AnnotationClaims]
		if v == "" {
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
