package main

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdEstablished returns a CRD as the API server serves it, Established
// at the given time (in the API's whole seconds), or not at all for zero.
func crdEstablished(at time.Time) *unstructured.Unstructured {
	conds := []any{map[string]any{"type": "NamesAccepted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}}
	if !at.IsZero() {
		conds = append(conds, map[string]any{"type": "Established", "status": "True", "lastTransitionTime": at.UTC().Format(time.RFC3339)})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "mirrors.samples.opkit.dev"},
		"status":   map[string]any{"conditions": conds},
	}}
}

// The API server holds every create of a custom resource for 2s while its
// CRD was established less than 2s ago, by the Established condition's
// time (apiextensions-apiserver's customresource_handler.go). A first
// round timed right after the control plane started was charged those 2s
// (create phase 2.4s instead of 0.3s): settleWait is how long to wait
// before timing anything so that no create is held.
func TestSettleWait(t *testing.T) {
	established := time.Date(2026, 11, 23, 7, 50, 33, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"just established", established.Add(300 * time.Millisecond), 1700*time.Millisecond + settleMargin},
		{"one second ago", established.Add(time.Second), time.Second + settleMargin},
		{"at the end of the hold", established.Add(crdCreateHold), settleMargin},
		{"long ago", established.Add(time.Minute), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settleWait(crdEstablished(established), tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("settleWait = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSettleWaitNotEstablished(t *testing.T) {
	_, err := settleWait(crdEstablished(time.Time{}), time.Now())
	if !errors.Is(err, errNotEstablished) {
		t.Errorf("settleWait of a CRD not established: error %v, want one wrapping errNotEstablished", err)
	}
}
