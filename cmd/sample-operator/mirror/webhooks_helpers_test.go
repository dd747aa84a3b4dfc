package mirror_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// hookedLabel marks the namespaces whose Mirrors a test's webhook
// configurations hook, so that they affect no other test.
const hookedLabel = "mirror-test.opkit.dev/hooked"

// hooked is a manager serving the Mirror's webhooks on 127.0.0.1, hooked
// to the Mirrors of one namespace, and kubectl to drive them.
type hooked struct {
	t          *testing.T
	ns         string
	cl         client.Client
	kubectl    string
	kubeconfig string
	// url and ca reach the webhook server directly, as the API server
	// does (or anyone who can reach its port).
	url string
	ca  []byte
	// sent records each request the manager serving the hooks sends to
	// the API server.
	sent *sentRequests
}

// sentRequests records requests sent through a rest.Config; safe for
// concurrent use.
type sentRequests struct {
	mu    sync.Mutex
	lines []string // "VERB path"
}

// wrap makes cfg's transport record each request in s.
func (s *sentRequests) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			s.mu.Lock()
			s.lines = append(s.lines, req.Method+" "+req.URL.Path)
			s.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
}

// since returns the requests recorded after the first n.
func (s *sentRequests) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines[n:])
}

// count is the number of requests recorded so far.
func (s *sentRequests) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lines)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// serveWebhooks starts a manager with mirror.SetupWebhooks, installs
// config/webhook/manifests.yaml pointed at it (url clientConfigs, a
// self-signed caBundle) for a new namespace of the test, and returns once
// the API server calls the hooks. The manager's requests to the API
// server are recorded in hooked.sent.
func serveWebhooks(t *testing.T) *hooked {
	t.Helper()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	scheme := newScheme(t)
	cfg, sent := rest.CopyConfig(env.Config()), &sentRequests{}
	sent.wrap(cfg)
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:  scheme,
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: certDir(t, crt, key)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mirror.SetupWebhooks(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	cl, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	h := &hooked{t: t, ns: env.Namespace(t), cl: cl, url: fmt.Sprintf("https://127.0.0.1:%d", port), ca: crt, sent: sent}
	h.kubectl, h.kubeconfig = kubectl(t)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, hookedLabel, h.ns)
	if _, err := env.Client().CoreV1().Namespaces().Patch(t.Context(), h.ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	installManifests(t, h.ns, h.url, crt)
	h.waitForHooks()
	return h
}

// installManifests installs the webhook configurations of
// config/webhook/manifests.yaml (installManifest).
func installManifests(t *testing.T, ns, url string, caBundle []byte) {
	t.Helper()
	for _, obj := range readManifests(t) {
		installManifest(t, ns, url, caBundle, obj)
	}
}

// installManifest installs obj, a webhook configuration of
// config/webhook/manifests.yaml, renamed after ns, hooking only ns, and
// calling url+path with caBundle instead of the Service, until the test
// ends. It checks the paths are those webhook.Register serves.
func installManifest(t *testing.T, ns, url string, caBundle []byte, obj runtime.Object) {
	t.Helper()
	gvk := v1alpha1.GroupVersion.WithKind("Mirror")
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{hookedLabel: ns}}
	client := func(cc *admissionregistrationv1.WebhookClientConfig, want string) {
		if cc.Service == nil || cc.Service.Path == nil || *cc.Service.Path != want {
			t.Fatalf("config/webhook/manifests.yaml: clientConfig %+v, want the service path %s", cc, want)
		}
		u := url + *cc.Service.Path
		*cc = admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	c, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	if !ok {
		t.Fatalf("config/webhook/manifests.yaml holds a %T, want only a ValidatingWebhookConfiguration", obj)
	}
	c.Name = ns
	for i := range c.Webhooks {
		client(&c.Webhooks[i].ClientConfig, webhook.ValidatePath(gvk))
		c.Webhooks[i].NamespaceSelector = selector
	}
	cs := env.Client().AdmissionregistrationV1()
	if _, err := cs.ValidatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.ValidatingWebhookConfigurations().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
}

// readManifests decodes config/webhook/manifests.yaml.
func readManifests(t *testing.T) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile("../../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(s).UniversalDeserializer()
	var out []runtime.Object
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		obj, _, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode config/webhook/manifests.yaml: %v", err)
		}
		out = append(out, obj)
	}
	if len(out) != 1 {
		t.Fatalf("config/webhook/manifests.yaml holds %d configurations, want 1", len(out))
	}
	return out
}

// waitForHooks waits until the API server calls the hooks: it caches
// webhook configurations, so a write just after installing them may
// bypass them. A dry run of a Mirror whose selector does not parse (the
// schema does not check label keys) is refused by the Validator once it
// is called.
func (h *hooked) waitForHooks() {
	h.t.Helper()
	probe := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: h.ns},
		Spec: v1alpha1.MirrorSpec{
			Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "probe"},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"not a label key": "x"}},
		},
	}
	var last error
	err := wait.PollUntilContextTimeout(h.t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = h.cl.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "spec.namespaceSelector: Invalid value"), nil
	})
	if err != nil {
		h.t.Fatalf("waiting for the API server to call the webhooks: %v (last dry run: %v)", err, last)
	}
}

// run runs kubectl with stdin, in the hooked namespace, and returns its
// combined output and whether it succeeded.
func (h *hooked) run(stdin string, args ...string) (string, bool) {
	h.t.Helper()
	args = append([]string{"--kubeconfig", h.kubeconfig, "-n", h.ns}, args...)
	cmd := exec.CommandContext(h.t.Context(), h.kubectl, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	h.t.Logf("kubectl %s:\n%s", strings.Join(args[4:], " "), out.String())
	return out.String(), err == nil
}

// mirrorYAML is a v1alpha1 Mirror named name in the hooked namespace,
// whose source has kind and sourceName, and whose selector matches the
// labels sel.
func (h *hooked) mirrorYAML(name, kind, sourceName, sel string) string {
	return fmt.Sprintf(`apiVersion: samples.opkit.dev/v1alpha1
kind: Mirror
metadata:
  name: %s
spec:
  source:
    kind: %s
    name: %s
  namespaceSelector:
    matchLabels: %s
`, name, kind, sourceName, sel)
}

// freePort returns a loopback port that was free a moment ago: the
// webhook server must be given its port, since the API server is told it.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
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
