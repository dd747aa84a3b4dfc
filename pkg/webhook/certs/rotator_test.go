package certs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

const conversionCRD = "gadgets.certs.opkit.dev"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func TestNewValidatesOptions(t *testing.T) {
	ok := certs.Options{CASecret: types.NamespacedName{Namespace: "ns", Name: "ca"}, Hosts: []string{"localhost"}}
	tests := []struct {
		name   string
		change func(*certs.Options)
		want   string
	}{
		{"no CA Secret", func(o *certs.Options) { o.CASecret = types.NamespacedName{} }, "CASecret needs a namespace and a name"},
		{"no name at all", func(o *certs.Options) { o.Hosts = nil }, "set Service or Hosts"},
		{"Service without namespace", func(o *certs.Options) { o.Service.Name = "webhook" }, "the Service needs both a namespace and a name"},
		{"cert outlives CA", func(o *certs.Options) { o.CALifetime, o.CertLifetime = 2*time.Hour, 3*time.Hour }, "CertLifetime (3h0m0s) must be shorter than CALifetime (2h0m0s)"},
		{"cert too short", func(o *certs.Options) { o.CertLifetime = time.Minute }, "at least MinLifetime (1h0m0s)"},
		{"negative resync", func(o *certs.Options) { o.ResyncInterval = -time.Second }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			_, err := certs.New(env.Config(), o)
			if !errors.Is(err, certs.ErrInvalidOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want ErrInvalidOptions saying %q", err, tt.want)
			}
		})
	}
	if _, err := certs.New(env.Config(), ok); err != nil {
		t.Errorf("New with valid options: %v", err)
	}
	if _, err := certs.New(nil, ok); !errors.Is(err, certs.ErrInvalidOptions) {
		t.Errorf("New without a REST config: %v, want ErrInvalidOptions", err)
	}
}

// Sync creates the CA Secret, patches the caBundle of every webhook of a
// ValidatingWebhookConfiguration and of a CRD's conversion webhook, leaving
// every other field alone, and writes a serving certificate that the
// bundle alone verifies.
func TestSyncCreatesCAAndPatchesTargets(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := options(t, ns, clk)
	opts.Targets.ValidatingWebhooks = []string{createValidating(t, opts)}
	opts.Targets.CRDs = []string{conversionCRD}
	before := validating(t, opts.Targets.ValidatingWebhooks[0])
	r := newRotator(t, opts)

	if err := r.Ready(); !errors.Is(err, certs.ErrNotReady) {
		t.Errorf("Ready before any sync: %v, want ErrNotReady", err)
	}
	mustSync(t, r)
	if err := r.Ready(); err != nil {
		t.Errorf("Ready after a sync: %v", err)
	}

	ca, bundle := caSecret(t, opts)
	verifyServing(t, servingCert(t, opts), parseCerts(t, bundle), opts, clk.Now())
	// x509 keeps whole seconds.
	if want := clk.Now().Add(certs.DefaultCALifetime).Truncate(time.Second); !ca.NotAfter.Equal(want) {
		t.Errorf("CA NotAfter %s, want now + DefaultCALifetime, %s", ca.NotAfter, want)
	}
	if want := clk.Now().Add(certs.DefaultCertLifetime).Truncate(time.Second); !servingCert(t, opts).NotAfter.Equal(want) {
		t.Errorf("serving NotAfter %s, want now + DefaultCertLifetime, %s", servingCert(t, opts).NotAfter, want)
	}
	after := validating(t, opts.Targets.ValidatingWebhooks[0])
	for i := range after.Webhooks {
		if !bytes.Equal(after.Webhooks[i].ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s: caBundle not the CA bundle", after.Webhooks[i].Name)
		}
		after.Webhooks[i].ClientConfig.CABundle = nil
	}
	if d := cmp.Diff(before.Webhooks, after.Webhooks); d != "" {
		t.Errorf("fields other than caBundle changed (-before +after):\n%s", d)
	}
	if got := crdCABundle(t); got != base64.StdEncoding.EncodeToString(bundle) {
		t.Errorf("CRD conversion caBundle = %.20q..., want the CA bundle", got)
	}
}

// A Start that runs puts back a caBundle someone reset, at its next resync.
func TestStartPutsBackAResetCABundle(t *testing.T) {
	noLeaks(t)
	ns := env.Namespace(t)
	clk := newArmedClock()
	opts := options(t, ns, clk)
	opts.Targets.ValidatingWebhooks = []string{createValidating(t, opts)}
	opts.Targets.CRDs = []string{conversionCRD}
	r := newRotator(t, opts)
	done := make(chan error)
	ctx, cancel := contextWithCancel(t)
	go func() { done <- r.Start(ctx) }()
	if d := clk.next(t); d != certs.DefaultResyncInterval {
		t.Errorf("Start waits %s after a sync, want the resync interval %s", d, certs.DefaultResyncInterval)
	}
	if err := r.Ready(); err != nil {
		t.Fatalf("Ready after Start synced: %v", err)
	}
	_, bundle := caSecret(t, opts)

	name := opts.Targets.ValidatingWebhooks[0]
	reset := `{"webhooks":[{"name":"b.certs.opkit.dev","clientConfig":{"caBundle":null}}]}`
	if _, err := env.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(
		t.Context(), name, types.StrategicMergePatchType, []byte(reset), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	crdReset := `{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":null}}}}}`
	if _, err := crds().Patch(t.Context(), conversionCRD, types.MergePatchType, []byte(crdReset), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := validating(t, name).Webhooks[1].ClientConfig.CABundle; len(got) != 0 {
		t.Fatalf("reset did not take: caBundle %d bytes", len(got))
	}

	clk.Step(certs.DefaultResyncInterval)
	clk.next(t) // the resync is done
	for _, w := range validating(t, name).Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s: caBundle not put back", w.Name)
		}
	}
	if got := crdCABundle(t); got != base64.StdEncoding.EncodeToString(bundle) {
		t.Errorf("CRD conversion caBundle not put back: %.20q", got)
	}

	if err := r.Start(ctx); err == nil || !strings.Contains(err.Error(), "Start called twice") {
		t.Errorf("second Start: %v, want an error saying so", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v when its context ended, want nil", err)
	}
}

// The serving certificate is kept until two thirds into its life and
// renewed then, well before it expires, by the same CA.
func TestServingCertificateRenewedBeforeExpiry(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := options(t, ns, clk)
	opts.CertLifetime = 30 * 24 * time.Hour
	r := newRotator(t, opts)
	mustSync(t, r)
	first := servingCert(t, opts)
	renew := due(first)

	clk.SetTime(renew.Add(-time.Minute))
	mustSync(t, r)
	if got := servingCert(t, opts); !got.Equal(first) {
		t.Errorf("serving certificate replaced at %s, before it was due at %s", clk.Now(), renew)
	}

	clk.SetTime(renew)
	mustSync(t, r)
	second := servingCert(t, opts)
	if second.Equal(first) {
		t.Fatalf("serving certificate not renewed at %s, two thirds into its life", renew)
	}
	if !clk.Now().Before(first.NotAfter) {
		t.Errorf("renewed at %s, after the old one expired at %s", clk.Now(), first.NotAfter)
	}
	ca, bundle := caSecret(t, opts)
	if err := second.CheckSignatureFrom(ca); err != nil {
		t.Errorf("renewed certificate not signed by the CA: %v", err)
	}
	verifyServing(t, second, parseCerts(t, bundle), opts, clk.Now())
	if err := r.Ready(); err != nil {
		t.Errorf("Ready after renewal: %v", err)
	}
}

func crds() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(env.Config()).Resource(crdResource)
}

func crdCABundle(t *testing.T) string {
	t.Helper()
	crd, err := crds().Get(t.Context(), conversionCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	return b
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
