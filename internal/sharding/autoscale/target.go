package autoscale

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ScaleTarget is a Target reached through its scale subresource, which
// apps/v1 Deployments and StatefulSets (and any resource that declares
// one) serve: reading and writing it needs get and update on
// <resource>/scale.
type ScaleTarget struct {
	Client    client.Client
	Mapper    meta.RESTMapper
	Resource  schema.GroupResource
	Namespace string
	Name      string
}

var _ Target = ScaleTarget{}

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// Replicas implements Target.
func (t ScaleTarget) Replicas(ctx context.Context) (int, error) {
	_, sc, err := t.get(ctx)
	if err != nil {
		return 0, err
	}
	n, _, err := unstructured.NestedInt64(sc.Object, "spec", "replicas")
	if err != nil {
		return 0, fmt.Errorf("read spec.replicas of %s: %w", t, err)
	}
	return int(n), nil
}

// Scale implements Target: it reads the scale again and writes it with
// the resourceVersion read, so that a change made meanwhile fails it.
func (t ScaleTarget) Scale(ctx context.Context, from, n int) error {
	obj, sc, err := t.get(ctx)
	if err != nil {
		return err
	}
	if got, _, _ := unstructured.NestedInt64(sc.Object, "spec", "replicas"); int(got) != from {
		return fmt.Errorf("scale %s: spec.replicas is %d, no longer %d", t, got, from)
	}
	if err := unstructured.SetNestedField(sc.Object, int64(n), "spec", "replicas"); err != nil {
		return fmt.Errorf("scale %s: %w", t, err)
	}
	if err := t.Client.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(sc)); err != nil {
		return fmt.Errorf("scale %s to %d: %w", t, n, err)
	}
	return nil
}

func (t ScaleTarget) String() string {
	return t.Resource.String() + " " + t.Namespace + "/" + t.Name
}

func (t ScaleTarget) get(ctx context.Context) (obj, sc *unstructured.Unstructured, err error) {
	gvk, err := t.Mapper.KindFor(t.Resource.WithVersion(""))
	if err != nil {
		return nil, nil, fmt.Errorf("find the kind of %s: %w", t.Resource, err)
	}
	obj = &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(t.Namespace)
	obj.SetName(t.Name)
	sc = &unstructured.Unstructured{}
	sc.SetGroupVersionKind(scaleGVK)
	if err := t.Client.SubResource("scale").Get(ctx, obj, sc); err != nil {
		return nil, nil, fmt.Errorf("read the scale of %s: %w", t, err)
	}
	return obj, sc, nil
}
