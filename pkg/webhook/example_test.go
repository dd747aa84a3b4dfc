package webhook_test

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// An operator's main with a defaulting and a validating webhook for
// Deployments, served on kubebuilder's port and certificate directory.
func Example() {
	cfg, err := manager.Config("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Health:  manager.HealthOptions{BindAddress: ":8081"},
		Webhook: manager.WebhookOptions{Port: 9443}, // CertDir: manager.DefaultWebhookCertDir()
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	replicas := field.NewPath("spec", "replicas")
	err = webhook.Register(mgr, webhook.Hooks[*appsv1.Deployment]{
		Defaulter: webhook.DefaulterFunc[*appsv1.Deployment](func(_ context.Context, d *appsv1.Deployment) error {
			if d.Spec.Replicas == nil {
				one := int32(1)
				d.Spec.Replicas = &one
			}
			return nil
		}),
		Validator: webhook.ValidatorFuncs[*appsv1.Deployment]{
			Create: func(_ context.Context, d *appsv1.Deployment) (webhook.Warnings, error) {
				if *d.Spec.Replicas > 10 {
					// kubectl prints: ... Deployment "web" is invalid:
					// spec.replicas: Invalid value: 20: at most 10
					return nil, apierrors.NewInvalid(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), d.Name,
						field.ErrorList{field.Invalid(replicas, *d.Spec.Replicas, "at most 10")})
				}
				if *d.Spec.Replicas == 1 {
					return webhook.Warnings{"spec.replicas is 1: the Deployment is not highly available"}, nil
				}
				return nil, nil
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mgr.Start(manager.SignalContext()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// The paths to put in a webhook configuration's clientConfig, as
// kubebuilder's markers name them.
func ExampleMutatePath() {
	fmt.Println(webhook.MutatePath(corev1.SchemeGroupVersion.WithKind("ConfigMap")))
	fmt.Println(webhook.ValidatePath(appsv1.SchemeGroupVersion.WithKind("Deployment")))
	// Output:
	// /mutate--v1-configmap
	// /validate-apps-v1-deployment
}

// Serving the conversion between the versions of a kind: in kubebuilder's
// style, where the hub type has Hub() and every other version ConvertTo
// and ConvertFrom, one call per kind is all:
//
//	webhook.RegisterConversion(mgr, webhook.Conversion[*v2.Gadget]{})
//
// Or with typed functions per version, here for v1:
func ExampleRegisterConversion() {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:6443"}, manager.Options{
		Scheme:  gadgetScheme(), // both versions of Gadget
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Webhook: manager.WebhookOptions{Port: 9443},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = webhook.RegisterConversion(mgr, webhook.Conversion[*GadgetV2]{
		Spokes: []webhook.Spoke[*GadgetV2]{
			webhook.SpokeFuncs(
				func(_ context.Context, src *GadgetV1, dst *GadgetV2) error { return v1ToV2(src, dst) },
				func(_ context.Context, src *GadgetV2, dst *GadgetV1) error { return v2ToV1(src, dst) },
			),
		},
	})
	fmt.Println(err)
	// The CRD's spec.conversion.webhook.clientConfig points at:
	fmt.Println(webhook.ConversionPath)
	// Output:
	// <nil>
	// /convert
}
