package porting_test

import (
	"context"
	"fmt"
	"os"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// checkRequester is what a validating webhook does before: it asks the API
// server, with a SubjectAccessReview, whether the user creating m may get
// the ConfigMap m copies.
func checkRequester(ctx context.Context, c crclient.Client, req admission.Request, m *v1alpha1.Mirror) error {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: req.UserInfo.Username, Groups: req.UserInfo.Groups, UID: req.UserInfo.UID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "configmaps", Namespace: m.Namespace, Name: m.Spec.Source.Name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return fmt.Errorf("check the requester: %w", err)
	}
	if !sar.Status.Allowed {
		return fmt.Errorf("%s may not get ConfigMap %s/%s", req.UserInfo.Username, m.Namespace, m.Spec.Source.Name)
	}
	return nil
}

// copySource copies m's ConfigMap into namespace with c: the same code
// before and after, with another client.
func copySource(ctx context.Context, c crclient.Client, m *v1alpha1.Mirror, namespace string) error {
	src := &corev1.ConfigMap{}
	if err := c.Get(ctx, crclient.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Source.Name}, src); err != nil {
		return fmt.Errorf("read the source: %w", err)
	}
	cp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: src.Name}, Data: src.Data}
	if err := c.Create(ctx, cp); err != nil {
		return fmt.Errorf("write the copy: %w", err)
	}
	return nil
}

// Before: check, then act as myself. The webhook checks the requester
// once, at admission; the reconciler later acts with the operator's own
// client, whatever changed since and whether or not the webhook was
// called.
func Example_checkThenActControllerRuntime() {
	var mgr ctrl.Manager      // from ctrl.NewManager
	var req admission.Request // the Mirror's create, in the webhook
	var m *v1alpha1.Mirror
	ctx := context.Background()
	if err := checkRequester(ctx, mgr.GetClient(), req, m); err != nil {
		fmt.Fprintln(os.Stderr, err) // the webhook denies the create
		return
	}
	// Later, in the reconciler:
	if err := copySource(ctx, mgr.GetClient(), m, "team-a"); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// After: act as the requester. The reconciler acts as the ServiceAccount
// the Mirror names, so the API server decides every request as it; an
// admission policy pins who may name which ServiceAccount, and each
// namespace's owner consents to the operator acting as it.
func Example_actAsTheRequester() {
	var mgr *manager.Manager // from manager.New
	var m *v1alpha1.Mirror
	ctx := context.Background()
	as := mgr.WriterAs("mirror", manager.ServiceAccount(m.Namespace, m.Spec.ServiceAccountName))
	if err := copySource(ctx, as, m, "team-a"); apierrors.IsForbidden(err) {
		// The API server's 403 names the verb and the resource: report it
		// in a condition, and retry with backoff.
		fmt.Fprintln(os.Stderr, err)
	}
}
