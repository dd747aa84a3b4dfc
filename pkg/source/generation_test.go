package source_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The API server raises metadata.generation when the deletion of an object
// held by a finalizer starts (deletionTimestamp set), for a custom resource
// as for a built-in type with a generation, and not when only the status,
// labels or finalizers change: GenerationChanged keeps the update that
// starts a deletion, so a controller needs no predicate of its own for it.
func TestGenerationRisesWhenDeletionStarts(t *testing.T) {
	crds, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{Paths: []string{"testdata/gizmos.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("uninstall CRDs: %v", err)
		}
	})
	c, err := client.New(env.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	gizmo := &unstructured.Unstructured{}
	gizmo.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.opkit.dev", Version: "v1", Kind: "Gizmo"})
	gizmo.Object["spec"] = map[string]any{"size": int64(1)}
	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		},
	}}
	for _, tc := range []struct {
		name string
		obj  client.Object
	}{{"custom resource", gizmo}, {"Deployment", deployment}} {
		obj := tc.obj
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			obj.SetNamespace(ns)
			obj.SetName("held")
			obj.SetFinalizers([]string{"test.opkit.dev/hold"})
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			created := obj.GetGeneration()
			// Status and metadata changes leave the generation alone.
			if u, ok := obj.(*unstructured.Unstructured); ok {
				u.Object["status"] = map[string]any{"ready": true}
			} else {
				obj.(*appsv1.Deployment).Status.ObservedGeneration = created
			}
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
			obj.SetLabels(map[string]string{"touched": "yes"})
			obj.SetFinalizers(append(obj.GetFinalizers(), "test.opkit.dev/other"))
			if err := c.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
			if got := obj.GetGeneration(); got != created {
				t.Fatalf("a status, label and finalizer change moved the generation from %d to %d", created, got)
			}
			if err := c.Delete(ctx, obj); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			if obj.GetDeletionTimestamp() == nil {
				t.Fatal("the deletion did not start: no deletionTimestamp")
			}
			if got := obj.GetGeneration(); got != created+1 {
				t.Errorf("generation after the deletion started = %d, want %d (created at %d)", got, created+1, created)
			}
			obj.SetFinalizers(nil)
			if err := c.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
		})
	}
}
