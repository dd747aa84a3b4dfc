// Ported from kubernetes-sigs/jobset (commit 08dfbdf),
// pkg/controllers/pod_controller.go and pod_controller_test.go,
// Copyright The Kubernetes Authors, licensed under the Apache License,
// Version 2.0 (the LICENSE file at the root of this repository). Changed:
// jobset's labels and annotations are replaced by example.com ones, so
// that the port needs only core types; follower Pods are deleted one after
// the other, not in parallel; the Node is read by its name alone; the
// reconciler keeps only what its unit test reaches; and the three jobset
// tests that inject errors through interceptors become three rows of one
// table.

package porting_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The exclusive-placement controller: the Pods of one indexed Job must run
// in one topology domain (a node pool, a zone). The leader, the Pod of
// completion index 0, is scheduled freely; each follower's nodeSelector
// names the domain it must run in. When a follower's domain is not the
// leader's node's, the followers are deleted, so that the Job makes them
// again where the leader is.
const (
	// exclusiveKey, on a Pod, names the Node label whose value is the
	// topology domain (jobset's alpha.jobset.sigs.k8s.io/exclusive-topology).
	exclusiveKey = "example.com/exclusive-topology"
	// jobKeyLabel, on a Pod, names its Job (jobset's
	// jobset.sigs.k8s.io/job-key).
	jobKeyLabel = "example.com/job-key"
	// podJobKey indexes Pods by jobKeyLabel.
	podJobKey = "podJobKey"
)

// indexPodJob indexes a Pod of exclusive placement by its Job.
func indexPodJob(pod *corev1.Pod) []string {
	if _, ok := pod.Annotations[exclusiveKey]; !ok {
		return nil
	}
	if k, ok := pod.Labels[jobKeyLabel]; ok {
		return []string{k}
	}
	return nil
}

func isLeaderPod(pod *corev1.Pod) bool {
	return pod.Annotations[batchv1.JobCompletionIndexAnnotation] == "0"
}

// followerPodTopology is the domain a follower's nodeSelector names.
func followerPodTopology(pod *corev1.Pod, topologyKey string) (string, error) {
	topology, ok := pod.Spec.NodeSelector[topologyKey]
	if !ok {
		return "", fmt.Errorf("pod %s nodeSelector is missing key: %s", pod.Name, topologyKey)
	}
	return topology, nil
}

// violated marks pod, which the caller owns, as disrupted by the
// controller, so that the Job's podFailurePolicy can ignore its deletion,
// and reports whether that changed it.
func violated(pod *corev1.Pod) bool {
	if slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	}) {
		return false
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "ExclusivePlacementViolation",
		LastTransitionTime: metav1.Now(),
	})
	return true
}

// crPodReconciler is the controller-runtime reconciler being ported. It
// reconciles leader Pods.
type crPodReconciler struct {
	crclient.Client // the manager's client: reads are deep copies from its cache
}

func (r *crPodReconciler) Reconcile(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
	var leaderPod corev1.Pod
	if err := r.Get(ctx, req.NamespacedName, &leaderPod); err != nil {
		return crreconcile.Result{}, crclient.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(&leaderPod)
	if owner == nil {
		return crreconcile.Result{}, fmt.Errorf("leader pod %q has no controller owner", leaderPod.Name)
	}
	var podList corev1.PodList
	if err := r.List(ctx, &podList, crclient.InNamespace(leaderPod.Namespace), crclient.MatchingFields{podJobKey: leaderPod.Labels[jobKeyLabel]}); err != nil {
		return crreconcile.Result{}, err
	}
	podList.Items = slices.DeleteFunc(podList.Items, func(p corev1.Pod) bool {
		o := metav1.GetControllerOf(&p)
		return o == nil || o.UID != owner.UID
	})
	valid, err := r.validatePodPlacements(ctx, &leaderPod, podList.Items)
	if err != nil || valid {
		return crreconcile.Result{}, err
	}
	return crreconcile.Result{}, r.deleteFollowerPods(ctx, podList.Items)
}

// validatePodPlacements reports whether every follower's domain is the
// leader's.
func (r *crPodReconciler) validatePodPlacements(ctx context.Context, leaderPod *corev1.Pod, pods []corev1.Pod) (bool, error) {
	topologyKey := leaderPod.Annotations[exclusiveKey]
	var node corev1.Node
	if err := r.Get(ctx, crclient.ObjectKey{Name: leaderPod.Spec.NodeName}, &node); apierrors.IsNotFound(err) {
		// Retried rather than deleting followers on incomplete information.
		return false, errors.New("leader topology is unknown (node not found)")
	} else if err != nil {
		return false, err
	}
	leaderTopology, ok := node.Labels[topologyKey]
	if !ok {
		return false, fmt.Errorf("node does not have topology label: %s", topologyKey)
	}
	for i := range pods {
		if isLeaderPod(&pods[i]) {
			continue
		}
		if t, err := followerPodTopology(&pods[i], topologyKey); err != nil || t != leaderTopology {
			return false, nil
		}
	}
	return true, nil
}

// deleteFollowerPods marks each follower disrupted, then deletes it.
func (r *crPodReconciler) deleteFollowerPods(ctx context.Context, pods []corev1.Pod) error {
	var errs []error
	for i := range pods {
		pod := &pods[i] // the List's deep copy: the reconciler may change it
		if isLeaderPod(pod) {
			continue
		}
		if violated(pod) {
			if err := r.Status().Update(ctx, pod); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := r.Delete(ctx, pod, crclient.PropagationPolicy(metav1.DeletePropagationBackground)); crclient.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// placementPods returns a leader Pod scheduled on the node test-node, and
// a follower whose nodeSelector names another domain than test-node's.
func placementPods() (leader, follower *corev1.Pod) {
	controller := true
	pod := func(name, index string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name,
			Labels:      map[string]string{jobKeyLabel: "job-key-1"},
			Annotations: map[string]string{exclusiveKey: "topology-key", batchv1.JobCompletionIndexAnnotation: index},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: "test-job", UID: "job-uid-1", Controller: &controller,
			}},
		}}
	}
	leader, follower = pod("test-job-0", "0"), pod("test-job-1", "1")
	leader.Spec.NodeName = "test-node"
	follower.Spec.NodeSelector = map[string]string{"topology-key": "wrong-topology"}
	return leader, follower
}

// placementNode is the node the leader runs on, in the domain
// expected-topology.
func placementNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "test-node", Labels: map[string]string{"topology-key": "expected-topology"}}}
}

// Before: jobset's unit tests of the Pod reconciler. Its fake client
// serves reads and records writes; interceptor.Funcs make a read (the
// Node's Get) or a write (a Delete) fail. The rows are jobset's
// TestReconcileDeletesMismatchedFollowerPods, the "get node error" case of
// TestValidatePodPlacements and the "delete follower pods with delete
// error" case of TestDeleteFollowerPods.
func TestPodReconcilerControllerRuntime(t *testing.T) {
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
			var deletedPods, statusUpdatedPods []string
			fc := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
				WithObjects(leader, follower).
				WithIndex(&corev1.Pod{}, podJobKey, func(o crclient.Object) []string { return indexPodJob(o.(*corev1.Pod)) }).
				WithStatusSubresource(leader, follower).
				WithInterceptorFuncs(interceptor.Funcs{
					Get: func(ctx context.Context, c crclient.WithWatch, key crclient.ObjectKey, obj crclient.Object, opts ...crclient.GetOption) error {
						node, ok := obj.(*corev1.Node)
						if !ok {
							return c.Get(ctx, key, obj, opts...)
						}
						if tc.nodeErr != nil {
							return tc.nodeErr
						}
						*node = *placementNode()
						return nil
					},
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
			r := &crPodReconciler{Client: fc}

			_, err := r.Reconcile(t.Context(), crreconcile.Request{NamespacedName: crclient.ObjectKeyFromObject(leader)})
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
