package crport_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/internal/fence"
	"github.com/opkit-dev/opkit/pkg/crport"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// startHosting starts mgr until the test ends, and fails the test if it
// fails.
func startHosting(t *testing.T, mgr *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	})
}

// cert-controller's rotator, which takes controller-runtime's manager,
// runs on opkit's through the manager it hosts: it makes the CA Secret
// and the serving certificate, and puts the CA in the webhook
// configuration's caBundle.
func TestControllerRuntimeManagerRunsCertController(t *testing.T) {
	ns := env.Namespace(t)
	cl := env.Client()
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "crport-rotator-" + ns},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "never.crport.opkit.dev",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: ptr.To("https://localhost:1/never")},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"crport.opkit.dev/never": ns}},
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cl.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cl.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})

	// cert-controller fills a Secret the deployment made (kustomize's, in
	// jobset's config); it does not create it.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-server-cert"}}
	if _, err := cl.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	ready := make(chan struct{})
	if err := rotator.AddRotator(crport.MustControllerRuntimeManager(mgr), &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: ns, Name: "webhook-server-cert"},
		CertDir:        certDir,
		CAName:         "crport-ca",
		CAOrganization: "opkit",
		DNSName:        "webhook-service." + ns + ".svc",
		IsReady:        ready,
		ControllerName: "cert-rotator-" + ns,
		Webhooks:       []rotator.WebhookInfo{{Name: vwc.Name, Type: rotator.Validating}},
	}); err != nil {
		t.Fatal(err)
	}
	startHosting(t, mgr)
	// cert-controller waits for its Secret to be mounted at CertDir; the
	// kubelet that would mount it is this goroutine.
	mounted := make(chan struct{})
	go func() {
		defer close(mounted)
		_ = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := cl.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
			if err != nil || len(s.Data["tls.crt"]) == 0 {
				return false, nil
			}
			for _, k := range []string{"tls.key", "tls.crt"} {
				if err := os.WriteFile(filepath.Join(certDir, k), s.Data[k], 0o600); err != nil {
					t.Error(err)
				}
			}
			return true, nil
		})
	}()
	t.Cleanup(func() { <-mounted })

	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		t.Fatal("the rotator was not ready within 2 minutes")
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		t.Fatalf("the serving certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// The caBundle verifies the serving certificate.
	var bundle []byte
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cl.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		bundle = got.Webhooks[0].ClientConfig.CABundle
		return len(bundle) > 0, nil
	}); err != nil {
		t.Fatalf("the caBundle was not set: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatalf("the caBundle holds no certificate: %q", bundle)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "webhook-service." + ns + ".svc"}); err != nil {
		t.Errorf("the serving certificate does not verify against the caBundle: %v", err)
	}
	if got, err := cl.CoreV1().Secrets(ns).Get(t.Context(), "webhook-server-cert", metav1.GetOptions{}); err != nil || len(got.Data["ca.crt"]) == 0 {
		t.Errorf("the rotator's Secret: %v, keys %v; want its CA in ca.crt", err, got.Data)
	}
}

// A controller on the hosted manager runs on the leader only, as it did on
// controller-runtime's, and its writes are fenced as opkit's controllers'
// are; what needs no leader runs on every replica.
func TestControllerRuntimeManagerRunsControllersOnTheLeader(t *testing.T) {
	ns := env.Namespace(t)
	cl := env.Client()
	// Another process holds the Lease: this one is a standby until it ends.
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hosted"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("another"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	if _, err := cl.CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics:        manager.MetricsOptions{BindAddress: "0"},
		Health:         manager.HealthOptions{BindAddress: "0"},
		LeaderElection: manager.LeaderElectionOptions{Enabled: true, Name: "hosted", Namespace: ns, LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	hosted, err := crport.ControllerRuntimeManager(mgr)
	if err != nil {
		t.Fatal(err)
	}
	if again := crport.MustControllerRuntimeManager(mgr); again != hosted {
		t.Error("a second call made a second controller-runtime manager")
	}
	var reconciles atomic.Int32
	type seen struct {
		elected, fenced bool
		err             error
	}
	seenc := make(chan seen, 16)
	err = ctrl.NewControllerManagedBy(hosted).
		Named("hosted-" + ns).
		For(&corev1.ConfigMap{}).
		Complete(crreconcile.Func(func(ctx context.Context, req crreconcile.Request) (crreconcile.Result, error) {
			if req.Namespace != ns {
				return crreconcile.Result{}, nil
			}
			reconciles.Add(1)
			s := seen{fenced: fence.FromContext(ctx) != nil}
			select {
			case <-mgr.Elected():
				s.elected = true
			default:
			}
			var cm corev1.ConfigMap
			if s.err = hosted.GetClient().Get(ctx, req.NamespacedName, &cm); s.err == nil {
				cm.Data = map[string]string{"reconciled": "yes"}
				s.err = hosted.GetClient().Update(ctx, &cm)
			}
			select {
			case seenc <- s:
			default:
			}
			return crreconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	everyReplica := make(chan struct{})
	if err := hosted.Add(noLeader(func(ctx context.Context) error {
		close(everyReplica)
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := hosted.AddReadyzCheck("hosted", func(*http.Request) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := hosted.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "opkit's manager") {
		t.Errorf("Start of the hosted manager = %v, want an error saying opkit's manager starts it", err)
	}
	startHosting(t, mgr)
	if _, err := crport.ControllerRuntimeManager(mgr); err != nil {
		t.Errorf("ControllerRuntimeManager of a started manager that hosts one: %v", err)
	}

	select {
	case <-everyReplica:
	case <-time.After(2 * time.Minute):
		t.Fatal("a runnable that needs no leader did not start on a standby")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
	if _, err := cl.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The hosted cache runs on the standby: once it has the ConfigMap, a
	// controller running there would have been told of it.
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var got corev1.ConfigMap
		return hosted.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: "a"}, &got) == nil, nil
	}); err != nil {
		t.Fatalf("the hosted cache did not see the ConfigMap: %v", err)
	}
	if n := reconciles.Load(); n != 0 {
		t.Fatalf("the hosted controller reconciled %d times on a standby", n)
	}

	// The other holder goes: this process is elected, and the controller
	// starts.
	if err := cl.CoordinationV1().Leases(ns).Delete(t.Context(), "hosted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-seenc:
		if !s.elected || !s.fenced || s.err != nil {
			t.Errorf("the hosted controller's reconcile: elected %v, fenced context %v, write %v; want elected, fenced, written", s.elected, s.fenced, s.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the hosted controller did not reconcile within 2 minutes of the election")
	}
}

// noLeader is a controller-runtime runnable that runs on every replica.
type noLeader func(ctx context.Context) error

func (f noLeader) Start(ctx context.Context) error { return f(ctx) }
func (noLeader) NeedLeaderElection() bool          { return false }

var _ crmanager.LeaderElectionRunnable = noLeader(nil)

// What controller-runtime code registers on the hosted manager's webhook
// server is served by opkit's, behind its guard; a manager already
// started hosts nothing new.
func TestControllerRuntimeManagerWebhookServerAndStart(t *testing.T) {
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
		Webhook: manager.WebhookOptions{Port: 9443, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("not started") }},
	})
	if err != nil {
		t.Fatal(err)
	}
	hosted := crport.MustControllerRuntimeManager(mgr)
	called := false
	hosted.GetWebhookServer().Register("/validate-thing", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	h, pattern := mgr.WebhookServer().WebhookMux().Handler(httptest.NewRequest(http.MethodPost, "/validate-thing", nil))
	if pattern != "/validate-thing" {
		t.Fatalf("opkit's webhook server serves %q at /validate-thing, want the hosted registration", pattern)
	}
	req := httptest.NewRequest(http.MethodPost, "/validate-thing", strings.NewReader("{}"))
	req.ContentLength = 8 << 20
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || called {
		t.Errorf("an 8 MiB request: status %d, handler called %v; want 413 from the guard, unread", rec.Code, called)
	}
	if err := hosted.AddMetricsServerExtraHandler("/debug", http.NotFoundHandler()); err == nil {
		t.Error("AddMetricsServerExtraHandler succeeded; the hosted manager serves no metrics")
	}

	other, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	startHosting(t, other)
	<-other.Elected() // closed once Start has begun, without leader election
	if _, err := crport.ControllerRuntimeManager(other); err == nil || !strings.Contains(err.Error(), "before Start") {
		t.Errorf("ControllerRuntimeManager of a started manager = %v, want an error saying to call it before Start", err)
	}
	if _, err := crport.ControllerRuntimeManager(nil); err == nil {
		t.Error("ControllerRuntimeManager(nil) succeeded")
	}
}
