// Ported from kubernetes-sigs/jobset (commit 08dfbdf),
// pkg/controllers/pod_controller.go and pod_controller_test.go,
// Copyright The Kubernetes Authors, licensed under the Apache License,
// Version 2.0 (the LICENSE file at the root of this repository). Changed:
// the port of placement_controllerruntime_test.go to opkit's Listers.

package porting_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// podReconciler is crPodReconciler on opkit: it reads through Listers,
// whose objects are the cache's, and writes through a client.
type podReconciler struct {
	pods   *cache.Lister[*corev1.Pod] // indexed by podJobKey
	nodes  *cache.Lister[*corev1.Node]
	client crclient.Client
}

var _ reconcile.Reconciler[reconcile.Request] = (*podReconciler)(nil)

func (r *podReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	leaderPod, err := r.pods.Get(req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), err
	}
	owner := metav1.GetControllerOf(leaderPod)
	if owner == nil {
		return reconcile.Done(), fmt.Errorf("leader pod %q has no controller owner", leaderPod.Name)
	}
	all, err := r.pods.ByIndexInNamespace(leaderPod.Namespace, podJobKey, leaderPod.Labels[jobKeyLabel])
	if err != nil {
		return reconcile.Done(), err
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if o := metav1.GetControllerOf(p); o != nil && o.UID == owner.UID {
			pods = append(pods, p)
		}
	}
	valid, err := r.validatePodPlacements(leaderPod, pods)
	if err != nil || valid {
		return reconcile.Done(), err
	}
	return reconcile.Done(), r.deleteFollowerPods(ctx, pods)
}

func (r *podReconciler) validatePodPlacements(leaderPod *corev1.Pod, pods []*corev1.Pod) (bool, error) {
	topologyKey := leaderPod.Annotations[exclusiveKey]
	node, err := r.nodes.Get("", leaderPod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return false, errors.New("leader topology is unknown (node not found)")
	}
	if err != nil {
		return false, err
	}
	leaderTopology, ok := node.Labels[topologyKey]
	if !ok {
		return false, fmt.Errorf("node does not have topology label: %s", topologyKey)
	}
	for _, p := range pods {
		if isLeaderPod(p) {
			continue
		}
		if t, err := followerPodTopology(p, topologyKey); err != nil || t != leaderTopology {
			return false, nil
		}
	}
	return true, nil
}

// deleteFollowerPods marks each follower disrupted, then deletes it. The
// Pods are the cache's: each is copied before it is changed.
func (r *podReconciler) deleteFollowerPods(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, cached := range pods {
		if isLeaderPod(cached) {
			continue
		}
		pod := cached.DeepCopy()
		if violated(pod) {
			if err := r.client.Status().Update(ctx, pod); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := r.client.Delete(ctx, pod, crclient.PropagationPolicy(metav1.DeletePropagationBackground)); crclient.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// After: the same rows, with the reconciler built from its pieces. Its
// reads come from cachetest Listers, whose Options.ReadError makes the
// Node's Get fail; its writes go to controller-runtime's fake client, whose
// interceptor.Funcs record them and make a Delete fail, as before. No
// cluster, no manager.
func TestPodReconcilerUnit(t *testing.T) {
	exampleErr := errors.New("example error")
	for _, tc := range []struct {
		name                    string
		nodeErr, deleteErr      error
		wantErr                 error
		wantDeleted, wantStatus []string
	}{
		{name: "deletes mismatched follower pods", wantDeleted: []string{"test-job-1"}, wantStatus: []string{"test-job-1"}},
		{name: "get node error", nodeErr: exampleErr, wantErr: exampleErr},
		{name: "delete error", deleteErr: exampleErr, wantErr: exampleErr, wantStatus: []string{"test-job-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader, follower := placementPods()
			pods := cachetest.NewLister(t, leader, follower)
			if err := pods.AddIndex(podJobKey, indexPodJob); err != nil {
				t.Fatal(err)
			}
			nodes, err := cachetest.New(cachetest.Options{
				ReadError: func(verb, namespace, name string) error { return tc.nodeErr },
			}, placementNode())
			if err != nil {
				t.Fatal(err)
			}
			var deletedPods, statusUpdatedPods []string
			fc := fake.NewClientBuilder().
				WithInterceptorFuncs(interceptor.Funcs{
					Delete: func(ctx context.Context, c crclient.WithWatch, obj crclient.Object, opts ...crclient.DeleteOption) error {
						if tc.deleteErr != nil {
							return tc.deleteErr
						}
						deletedPods = append(deletedPods, obj.GetName())
						return nil
					},
					SubResourceUpdate: func(ctx context.Context, c crclient.Client, subResourceName string, obj crclient.Object, opts ...crclient.SubResourceUpdateOption) error {
						statusUpdatedPods = append(statusUpdatedPods, obj.GetName())
						return nil
					},
				}).Build()
			r := &podReconciler{pods: pods, nodes: nodes.Lister(), client: fc}

			_, err = r.Reconcile(t.Context(), reconcile.Request{Namespace: leader.Namespace, Name: leader.Name})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reconcile = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantDeleted, deletedPods); diff != "" {
				t.Errorf("deleted Pods (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStatus, statusUpdatedPods); diff != "" {
				t.Errorf("Pods whose status was updated (-want +got):\n%s", diff)
			}
		})
	}
}
