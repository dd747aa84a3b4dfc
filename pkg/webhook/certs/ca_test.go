package certs_test

import (
	"crypto/x509"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// The CA is replaced two thirds into its life; the bundle keeps the old CA
// while it is valid, so certificates it signed stay trusted while every
// replica moves on, and drops it once it expired. The serving certificate
// is reissued by the new CA at once, and the caBundles follow.
func TestCARotation(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := options(t, ns, clk)
	opts.CALifetime = 90 * 24 * time.Hour
	opts.CertLifetime = 10 * 24 * time.Hour
	opts.Targets.ValidatingWebhooks = []string{createValidating(t, opts)}
	r := newRotator(t, opts)
	mustSync(t, r)
	firstCA, _ := caSecret(t, opts)
	firstServing := servingCert(t, opts)

	clk.SetTime(due(firstCA))
	mustSync(t, r)
	secondCA, bundle := caSecret(t, opts)
	if secondCA.Equal(firstCA) {
		t.Fatal("CA not rotated two thirds into its life")
	}
	inBundle := parseCerts(t, bundle)
	if len(inBundle) != 2 || !inBundle[0].Equal(secondCA) || !inBundle[1].Equal(firstCA) {
		t.Errorf("bundle holds %d certificates, want the new CA then the old one", len(inBundle))
	}
	serving := servingCert(t, opts)
	if serving.Equal(firstServing) {
		t.Error("serving certificate not reissued by the new CA")
	}
	if err := serving.CheckSignatureFrom(secondCA); err != nil {
		t.Errorf("serving certificate not signed by the new CA: %v", err)
	}
	if w := validating(t, opts.Targets.ValidatingWebhooks[0]).Webhooks[0]; string(w.ClientConfig.CABundle) != string(bundle) {
		t.Error("caBundle does not follow the rotated CA")
	}

	clk.SetTime(due(secondCA))
	if clk.Now().Before(firstCA.NotAfter) {
		t.Fatal("the test means the first CA to have expired by now")
	}
	mustSync(t, r)
	thirdCA, bundle := caSecret(t, opts)
	inBundle = parseCerts(t, bundle)
	if len(inBundle) != 2 || !inBundle[0].Equal(thirdCA) || !inBundle[1].Equal(secondCA) {
		t.Errorf("after the first CA expired the bundle holds %d certificates, want the third and second CA", len(inBundle))
	}
}

// Two replicas starting together on one missing Secret, and later rotating
// its CA together, agree on one CA: the loser of the create (AlreadyExists)
// or of the update (Conflict) uses the winner's.
func TestRacingRotatorsAgreeOnOneCA(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	for round := range 5 {
		base := options(t, ns, clk)
		base.CASecret = types.NamespacedName{Namespace: ns, Name: "race-" + string(rune('a'+round))}
		base.CALifetime = 90 * 24 * time.Hour
		base.CertLifetime = 10 * 24 * time.Hour
		a, b := base, base
		b.CertDir = t.TempDir()
		rs := []*certs.Rotator{newRotator(t, a), newRotator(t, b)}
		syncAll(t, rs)
		agree(t, base, a, b, clk.Now())

		ca, _ := caSecret(t, base)
		clk.SetTime(due(ca))
		syncAll(t, rs)
		rotated, _ := caSecret(t, base)
		if rotated.Equal(ca) {
			t.Fatalf("round %d: CA not rotated", round)
		}
		agree(t, base, a, b, clk.Now())
		s, err := env.Client().CoreV1().Secrets(ns).Get(t.Context(), base.CASecret.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// One create and at most one rotation: a second rotation would
		// have dropped the CA the other replica's certificate is signed by
		// from the front of the bundle.
		if n := len(parseCerts(t, s.Data[certs.BundleKey])); n != 2 {
			t.Errorf("round %d: the bundle holds %d CAs after one rotation, want 2", round, n)
		}
	}
}

// syncAll runs Sync on every rotator at once.
func syncAll(t *testing.T, rs []*certs.Rotator) {
	t.Helper()
	start := make(chan struct{})
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			<-start
			errs[i] = r.Sync(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Sync of rotator %d: %v", i, err)
		}
	}
}

// agree fails t unless the serving certificates of a and b are both signed
// by the CA now in the Secret.
func agree(t *testing.T, base, a, b certs.Options, now time.Time) {
	t.Helper()
	ca, _ := caSecret(t, base)
	for _, o := range []certs.Options{a, b} {
		if err := servingCert(t, o).CheckSignatureFrom(ca); err != nil {
			t.Errorf("a replica's serving certificate is not signed by the CA in the Secret: %v", err)
		}
		verifyServing(t, servingCert(t, o), []*x509.Certificate{ca}, o, now)
	}
}
