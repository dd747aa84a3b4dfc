package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// crdCreateHold is how long the API server holds each create of a custom
// resource while the resource's CRD became Established less than that long
// ago: k8s.io/apiextensions-apiserver's customresource_handler.go sleeps
// 2s then ("justCreated"), so that the other servers of an HA control
// plane see the CRD first. The first create of a round timed right after
// the control plane started took 2s that way.
const crdCreateHold = 2 * time.Second

// settleMargin is waited beyond the hold: the condition's time and ours are
// read from the wall clock, which may step.
const settleMargin = 100 * time.Millisecond

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var errNotEstablished = errors.New("CRD not established")

// waitCRDsSettled waits until the API server no longer holds creates of the
// resources of any CRD, so that no phase is timed with a hold in it.
func waitCRDsSettled(ctx context.Context, dyn dynamic.Interface) error {
	l, err := dyn.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the CRDs: %w", err)
	}
	var wait time.Duration
	now := time.Now()
	for i := range l.Items {
		d, err := settleWait(&l.Items[i], now)
		if err != nil {
			return err
		}
		wait = max(wait, d)
	}
	if wait == 0 {
		return nil
	}
	logf("waiting %v until the API server stops holding creates of custom resources whose CRD was just established", wait.Round(time.Millisecond))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("wait for the CRDs to settle: %w", context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

// settleWait returns how long after now the API server stops holding
// creates of crd's resources: crdCreateHold after its Established
// condition's time, which the API keeps in whole seconds, as the server
// compares it.
func settleWait(crd *unstructured.Unstructured, now time.Time) (time.Duration, error) {
	conds, _, err := unstructured.NestedSlice(crd.Object, "status", "conditions")
	if err != nil {
		return 0, fmt.Errorf("read the conditions of CRD %s: %w", crd.GetName(), err)
	}
	for _, c := range conds {
		c, _ := c.(map[string]any)
		if c["type"] != "Established" || c["status"] != "True" {
			continue
		}
		s, _ := c["lastTransitionTime"].(string)
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return 0, fmt.Errorf("read when CRD %s was established: %w", crd.GetName(), err)
		}
		return max(at.Add(crdCreateHold+settleMargin).Sub(now), 0), nil
	}
	return 0, fmt.Errorf("CRD %s: %w", crd.GetName(), errNotEstablished)
}
