package porting_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// annotate marks a Deployment read from a Lister as seen. dep is the
// cache's object, shared with every reader: the change goes into a copy,
// and the patch is the difference between the two.
func (r *webReconciler) annotate(ctx context.Context, dep *appsv1.Deployment) error {
	cp := dep.DeepCopy() // never dep.Annotations[...] = ...: that writes into the cache
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations["example.com/seen"] = "true"
	if err := r.client.Patch(ctx, cp, crclient.MergeFrom(dep)); err != nil {
		return fmt.Errorf("annotate Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	return nil
}

// Modifying a copy of a cached object and patching the difference.
func Example_deepCopy() {
	var r *webReconciler
	dep, err := r.deployments.Get("shop", "web")
	if err != nil {
		panic(err)
	}
	if err := r.annotate(context.Background(), dep); err != nil {
		panic(err)
	}
}
