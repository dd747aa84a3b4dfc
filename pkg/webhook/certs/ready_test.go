package certs_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// A target that is missing keeps the rotator unready, with an error that
// names it; once it exists the next sync makes the rotator ready.
func TestReadyWaitsForEveryTarget(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := options(t, ns, clk)
	opts.Targets.MutatingWebhooks = []string{"certs-ready-mutating"}
	r := newRotator(t, opts)

	err := r.Sync(t.Context())
	if err == nil || !strings.Contains(err.Error(), "MutatingWebhookConfiguration certs-ready-mutating") ||
		!strings.Contains(err.Error(), "create it, or drop it from Options.Targets") {
		t.Fatalf("Sync with a missing target: %v, want an error naming it and what to do", err)
	}
	ready := r.Check(&http.Request{})
	if !errors.Is(ready, certs.ErrNotReady) || !strings.Contains(ready.Error(), "certs-ready-mutating") {
		t.Errorf("Check with a missing target: %v, want ErrNotReady naming it", ready)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.WaitReady(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitReady on a canceled context before ready: %v, want context.Canceled", err)
	}

	createMutating(t, opts, "certs-ready-mutating")
	mustSync(t, r)
	if err := errors.Join(r.Ready(), r.WaitReady(t.Context())); err != nil {
		t.Errorf("after the target exists: %v", err)
	}
	_, bundle := caSecret(t, opts)
	c, err := env.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), "certs-ready-mutating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Error("MutatingWebhookConfiguration caBundle not patched")
	}

	clk.SetTime(servingCert(t, opts).NotAfter)
	if err := r.Ready(); !errors.Is(err, certs.ErrNotReady) {
		t.Errorf("Ready once the serving certificate expired without a sync: %v, want ErrNotReady", err)
	}
}

// A CRD without a conversion webhook cannot carry a caBundle: the error
// says what to change.
func TestCRDWithoutConversionWebhook(t *testing.T) {
	opts := options(t, env.Namespace(t), clocktesting.NewFakeClock(time.Now()))
	opts.Targets.CRDs = []string{"plainthings.certs.opkit.dev"}
	err := newRotator(t, opts).Sync(t.Context())
	if err == nil || !strings.Contains(err.Error(), `spec.conversion.strategy is "None", not Webhook`) {
		t.Errorf("Sync: %v, want an error saying the CRD has no conversion webhook", err)
	}
}

func createMutating(t *testing.T, opts certs.Options, name string) {
	t.Helper()
	none := admissionv1.SideEffectClassNone
	c := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "m.certs.opkit.dev",
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
				Namespace: opts.Service.Namespace, Name: opts.Service.Name, Path: ptr("/mutate"),
			}},
		}},
	}
	api := env.Client().AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := api.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingWebhookConfiguration: %v", err)
	}
	t.Cleanup(func() {
		if err := api.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete MutatingWebhookConfiguration %s: %v", name, err)
		}
	})
}

// After a failed sync Start tries again within seconds, not at the next
// resync, so a transient error at start does not keep readiness down.
func TestStartRetriesSoonAfterAFailure(t *testing.T) {
	noLeaks(t)
	clk := newArmedClock()
	opts := options(t, env.Namespace(t), clk)
	opts.Targets.ValidatingWebhooks = []string{"certs-missing-validating"}
	r := newRotator(t, opts)
	if r.NeedLeaderElection() {
		t.Error("NeedLeaderElection: true, want false: every replica serves webhooks")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	if d := clk.next(t); d != 5*time.Second {
		t.Errorf("after a failed sync Start waits %s, want 5s", d)
	}
	if err := r.Ready(); !errors.Is(err, certs.ErrNotReady) {
		t.Errorf("Ready after a failed sync: %v, want ErrNotReady", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}
