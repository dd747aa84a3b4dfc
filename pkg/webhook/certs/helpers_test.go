package certs_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// armedClock is a fake clock that reports each timer it hands out, so a
// test knows that Start finished a sync and waits for the next, and can
// step the clock without a timer being missed.
type armedClock struct {
	*clocktesting.FakeClock
	armed chan time.Duration
}

func newArmedClock() *armedClock {
	return &armedClock{FakeClock: clocktesting.NewFakeClock(time.Now()), armed: make(chan time.Duration, 100)}
}

func (c *armedClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.armed <- d
	return t
}

// next waits until Start arms its next timer and returns its duration.
func (c *armedClock) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-t.Context().Done():
		t.Fatal("Start armed no timer")
		return 0
	}
}

// options are Options for one test: a CA Secret in ns, the Service
// "webhook" in ns, a CertDir of the test's own and clk.
func options(t *testing.T, ns string, clk clock.Clock) certs.Options {
	return certs.Options{
		CASecret: types.NamespacedName{Namespace: ns, Name: "webhook-ca"},
		Service:  types.NamespacedName{Namespace: ns, Name: "webhook"},
		CertDir:  t.TempDir(),
		Clock:    clk,
	}
}

func newRotator(t *testing.T, opts certs.Options) *certs.Rotator {
	t.Helper()
	r, err := certs.New(env.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustSync(t *testing.T, r *certs.Rotator) {
	t.Helper()
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// caSecret returns the CA Secret's CA certificate and bundle.
func caSecret(t *testing.T, opts certs.Options) (*x509.Certificate, []byte) {
	t.Helper()
	s, err := env.Client().CoreV1().Secrets(opts.CASecret.Namespace).Get(t.Context(), opts.CASecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get CA Secret: %v", err)
	}
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("CA Secret type %q, want %q", s.Type, corev1.SecretTypeTLS)
	}
	return parseCerts(t, s.Data[corev1.TLSCertKey])[0], s.Data[certs.BundleKey]
}

func parseCerts(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("no certificate in PEM")
	}
	return out
}

// servingCert reads the serving certificate in opts.CertDir.
func servingCert(t *testing.T, opts certs.Options) *x509.Certificate {
	t.Helper()
	certPEM, err := readFile(opts.CertDir, certs.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	return parseCerts(t, certPEM)[0]
}

// verifyServing fails t unless c is valid at now for the Service's name
// with roots as the only trust.
func verifyServing(t *testing.T, c *x509.Certificate, roots []*x509.Certificate, opts certs.Options, now time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	name := opts.Service.Name + "." + opts.Service.Namespace + ".svc"
	_, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Errorf("verify serving certificate for %s: %v", name, err)
	}
}

// createValidating creates a ValidatingWebhookConfiguration named after
// the test with two webhooks that match nothing, and deletes it at the end.
func createValidating(t *testing.T, opts certs.Options) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	var hooks []admissionv1.ValidatingWebhook
	for _, h := range []string{"a.certs.opkit.dev", "b.certs.opkit.dev"} {
		hooks = append(hooks, admissionv1.ValidatingWebhook{
			Name:                    h,
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
				Namespace: opts.Service.Namespace, Name: opts.Service.Name, Path: ptr("/validate"),
			}},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{"nothing.certs.opkit.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
			}},
		})
	}
	c := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
	api := env.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := api.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingWebhookConfiguration: %v", err)
	}
	t.Cleanup(func() {
		if err := api.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ValidatingWebhookConfiguration %s: %v", name, err)
		}
	})
	return name
}

func validating(t *testing.T, name string) *admissionv1.ValidatingWebhookConfiguration {
	t.Helper()
	c, err := env.Client().AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func readFile(dir, name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }

// due is when c is to be replaced: two thirds into its validity.
func due(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// noLeaks fails t if goroutines it starts outlive it. Call it first, so
// that its check runs after every other cleanup.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		// Idle HTTP/2 connections of the clients stay open for reuse.
		goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
	})
}
