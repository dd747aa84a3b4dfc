package certs_test

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// New checks the options before anything runs.
func ExampleNew_invalidOptions() {
	_, err := certs.New(&rest.Config{Host: "https://127.0.0.1:6443"}, certs.Options{
		CASecret: types.NamespacedName{Namespace: "system", Name: "webhook-ca"},
	})
	fmt.Println(errors.Is(err, certs.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// create certificate rotator: invalid certificate options: set Service or Hosts: the serving certificate needs a name
}

// A Rotator feeding controller-runtime's webhook server: the server starts
// once the certificate is on disk and reloads it when it is renewed.
func ExampleRotator() {
	run := func(ctx context.Context, cfg *rest.Config) error {
		opts := certs.Options{
			CASecret: types.NamespacedName{Namespace: "system", Name: "webhook-ca"},
			Service:  types.NamespacedName{Namespace: "system", Name: "webhook-service"},
			Targets: certs.Targets{
				ValidatingWebhooks: []string{"validating-webhook-configuration"},
				CRDs:               []string{"mirrors.samples.opkit.dev"},
			},
		}
		r, err := certs.New(cfg, opts)
		if err != nil {
			return err
		}
		go func() { _ = r.Start(ctx) }()
		if err := r.WaitReady(ctx); err != nil {
			return err
		}
		srv := webhook.NewServer(webhook.Options{CertDir: certs.DefaultCertDir()})
		return srv.Start(ctx)
	}
	_ = run
}
