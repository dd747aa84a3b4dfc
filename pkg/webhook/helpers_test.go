package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// selectorLabel marks the namespaces a test's webhook configurations
// select, so that they cannot affect any other test.
const selectorLabel = "webhook-test.opkit.dev/selected"

// freePort returns a loopback port that was free a moment ago: the webhook
// server must be given its port, since the API server must be told it.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// selfSigned returns a serving certificate and key for 127.0.0.1, and the
// PEM to trust it by (the certificate and its CA).
func selfSigned(t *testing.T) (crt, key []byte) {
	t.Helper()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return crt, key
}

// certDir writes crt and key as tls.crt and tls.key into a new directory.
func certDir(t *testing.T, crt, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// selectedNamespace returns a namespace of the test that its webhook
// configurations select.
func selectedNamespace(t *testing.T) string {
	t.Helper()
	ns := env.Namespace(t)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, selectorLabel, ns)
	if _, err := env.Client().CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// installWebhooks makes the API server call url+MutatePath and
// url+ValidatePath for ConfigMaps written in ns, refusing writes when they
// cannot be called (failurePolicy Fail), until the test ends.
func installWebhooks(t *testing.T, ns, url string, caBundle []byte, mutatePath, validatePath string) {
	t.Helper()
	ctx := t.Context()
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{selectorLabel: ns}}
	rule := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}
	}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := url + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	cs := env.Client().AdmissionregistrationV1()
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "default.configmaps.opkit.dev", ClientConfig: client(mutatePath),
			Rules:             rule(admissionregistrationv1.Create, admissionregistrationv1.Update),
			NamespaceSelector: selector, FailurePolicy: &fail, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.configmaps.opkit.dev", ClientConfig: client(validatePath),
			Rules:             rule(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
			NamespaceSelector: selector, FailurePolicy: &fail, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cs.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.MutatingWebhookConfigurations().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	if _, err := cs.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.ValidatingWebhookConfigurations().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
}

// newManager returns a manager of the test control plane with a webhook
// server on 127.0.0.1 and health probes on a free loopback port.
func newManager(t *testing.T, ns string, wo manager.WebhookOptions) *manager.Manager {
	t.Helper()
	wo.Host = "127.0.0.1"
	if wo.Port == 0 {
		wo.Port = freePort(t)
	}
	m, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache:   cache.Options{Namespaces: []string{ns}},
		Webhook: wo,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// started is a manager running in the background.
type started struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// start runs m until stop or the end of the test, and returns once its
// probes listen.
func start(t *testing.T, m *manager.Manager) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- m.Start(ctx) }()
	t.Cleanup(func() {
		if err := s.stop(t); err != nil {
			t.Errorf("Start = %v", err)
		}
	})
	poll(t, "the health probes to listen", func() bool { return m.HealthProbeAddr() != "" })
	return s
}

// stop stops the manager and returns what Start returned.
func (s *started) stop(t *testing.T) error {
	t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case s.err = <-s.done:
		case <-time.After(time.Minute):
			t.Fatal("the manager did not stop within a minute")
		}
	})
	return s.err
}

// poll calls cond until it is true, failing the test after 30 seconds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// get returns the status code and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// warnings collects the warnings the API server sends a client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// clientWith returns a clientset whose warnings go to w.
func clientWith(w *warnings) kubernetes.Interface {
	cfg := env.Config()
	cfg.WarningHandler = w
	return kubernetes.NewForConfigOrDie(cfg)
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}
