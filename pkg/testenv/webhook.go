package testenv

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/testenv/internal/plane"
)

// WebhookOptions install webhooks that the API server calls on the test's
// own webhook server, at Environment.Webhook(). The zero value installs
// none and makes no server address or certificate. The configurations
// (as controller-gen writes them) and CRD conversion are pointed at
// https://127.0.0.1:<port><path>, with a CA that Start made as caBundle,
// as envtest's WebhookInstallOptions do.
//
// Webhooks whose failurePolicy is Fail refuse the writes they match until
// the test's manager serves them; narrow them with a namespaceSelector or
// objectSelector when other tests write such objects.
type WebhookOptions struct {
	// Paths are files or directories (not recursive) of
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration
	// manifests, such as controller-gen writes into
	// config/webhook/manifests.yaml. Each webhook's clientConfig, service
	// or url, becomes https://127.0.0.1:<Port><its path> with the CA as
	// caBundle. A path that does not exist, or a webhook without a path,
	// fails Start before any process starts. Defaults to none.
	Paths []string
	// ConvertCRDs are names of CRDs in Options.CRDDirs, such as
	// mirrors.samples.opkit.dev, whose versions the test's server converts
	// at /convert (package webhook's ConversionPath): controller-gen's CRD
	// bases carry no conversion stanza (kubebuilder adds it with a
	// kustomize patch), so say which here. A CRD whose manifest already
	// says strategy Webhook is pointed at the test's server too. A name
	// not in Options.CRDDirs fails Start. Defaults to none.
	ConvertCRDs []string
	// Port is the port the API server calls on 127.0.0.1. Defaults to 0: a
	// port that was free when Start ran.
	Port int
	// ClientAuth makes the API server present a client certificate to the
	// admission webhooks it calls (an AdmissionConfiguration whose
	// webhook plugins' kubeconfig holds it), signed by a CA of its own
	// that WebhookServer.ClientCAFile holds: give that to
	// manager.Options.Webhook.ClientCAFile to let only the API server
	// call them. CRD conversion webhooks get no certificate: the API
	// server presents none to them. Defaults to false.
	ClientAuth bool
}

func (o WebhookOptions) enabled() bool {
	return len(o.Paths) > 0 || len(o.ConvertCRDs) > 0 || o.Port != 0 || o.ClientAuth
}

// WebhookServer is where the API server calls the test's webhooks: give
// Host, Port and CertDir to manager.Options.Webhook.
type WebhookServer struct {
	// Host is 127.0.0.1.
	Host string
	// Port is WebhookOptions.Port, or the free port Start chose.
	Port int
	// CertDir holds tls.crt and tls.key, valid for 127.0.0.1 and
	// localhost and signed by the CA that Start gave the API server as
	// each webhook's caBundle. Stop removes it.
	CertDir string
	// ClientCAFile, with WebhookOptions.ClientAuth, is the PEM file of
	// the CA that signed the API server's webhook client certificate, in
	// CertDir; "" without.
	ClientCAFile string
}

// Webhook returns where the API server calls the webhooks installed by
// Options.Webhook; the zero WebhookServer when Options.Webhook is zero.
func (e *Environment) Webhook() WebhookServer {
	if e.webhook == nil {
		return WebhookServer{}
	}
	return e.webhook.server
}

// webhookInstall is what Start installs for Options.Webhook.
type webhookInstall struct {
	server   WebhookServer
	caBundle []byte
	configs  []*unstructured.Unstructured
	// convert are the names in ConvertCRDs, converted those of them that
	// Options.CRDDirs held.
	convert, converted []string
	// admissionConfig is kube-apiserver's admission configuration file,
	// with ClientAuth; "" without.
	admissionConfig string
}

// Kinds of webhook configurations that Paths holds.
var webhookKinds = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

// prepareWebhook reads and rewrites the manifests and makes the
// certificates, before any process starts; nil when o is zero.
func prepareWebhook(o WebhookOptions) (*webhookInstall, error) {
	if !o.enabled() {
		return nil, nil
	}
	w := &webhookInstall{convert: o.ConvertCRDs, server: WebhookServer{Host: "127.0.0.1", Port: o.Port}}
	if w.server.Port == 0 {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("choose webhook port: %w", err)
		}
		w.server.Port = port
	}
	for _, p := range o.Paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("webhook manifest path %q (Options.Webhook.Paths): %w", p, err)
		}
		docs, err := plane.ReadManifests(p, webhookKinds...)
		if err != nil {
			return nil, fmt.Errorf("read webhook manifests in %s: %w", p, err)
		}
		w.configs = append(w.configs, docs...)
	}
	if err := w.makeCerts(); err != nil {
		return nil, err
	}
	if o.ClientAuth {
		var err error
		if w.server.ClientCAFile, w.admissionConfig, err = plane.WriteWebhookClientAuth(w.server.CertDir); err != nil {
			w.cleanup()
			return nil, err
		}
	}
	for _, c := range w.configs {
		if err := w.pointWebhooks(c); err != nil {
			w.cleanup()
			return nil, err
		}
	}
	return w, nil
}

func freePort() (int, error) { return freeport.Port() }

// makeCerts writes a serving certificate for 127.0.0.1 and localhost into
// a new CertDir and keeps its CA as the caBundle.
func (w *webhookInstall) makeCerts() error {
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
	if err != nil {
		return fmt.Errorf("make webhook serving certificate: %w", err)
	}
	// crt holds the serving certificate, then the CA that signed it.
	first, rest := pem.Decode(crt)
	if first == nil || len(rest) == 0 {
		return fmt.Errorf("make webhook serving certificate: no CA in the chain")
	}
	w.caBundle = rest
	dir, err := os.MkdirTemp("", "opkit-webhook-")
	if err != nil {
		return fmt.Errorf("make webhook certificate directory: %w", err)
	}
	w.server.CertDir = dir
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			w.cleanup()
			return fmt.Errorf("write webhook certificate: %w", err)
		}
	}
	return nil
}

func (w *webhookInstall) cleanup() {
	if w != nil && w.server.CertDir != "" {
		_ = os.RemoveAll(w.server.CertDir)
	}
}

func (w *webhookInstall) endpoint(path string) string {
	return "https://" + net.JoinHostPort(w.server.Host, strconv.Itoa(w.server.Port)) + path
}

// pointWebhooks points every webhook of a configuration at the local
// server, keeping each one's path.
func (w *webhookInstall) pointWebhooks(c *unstructured.Unstructured) error {
	hooks, _, err := unstructured.NestedSlice(c.Object, "webhooks")
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.GetKind(), c.GetName(), err)
	}
	for i, h := range hooks {
		h, _ := h.(map[string]any)
		name, _ := h["name"].(string)
		path, err := webhookPath(h)
		if err != nil {
			return fmt.Errorf("%s %s, webhook %q: %w", c.GetKind(), c.GetName(), name, err)
		}
		h["clientConfig"] = w.clientConfig(path)
		hooks[i] = h
	}
	return unstructured.SetNestedSlice(c.Object, hooks, "webhooks")
}

func (w *webhookInstall) clientConfig(path string) map[string]any {
	return map[string]any{"url": w.endpoint(path), "caBundle": base64.StdEncoding.EncodeToString(w.caBundle)}
}

// webhookPath is the path of a webhook's clientConfig, service or url.
func webhookPath(h map[string]any) (string, error) {
	if p, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path"); p != "" {
		return p, nil
	}
	if u, _, _ := unstructured.NestedString(h, "clientConfig", "url"); u != "" {
		if parsed, err := url.Parse(u); err == nil && parsed.Path != "" {
			return parsed.Path, nil
		}
	}
	return "", fmt.Errorf("its clientConfig has no path (service.path, or a url with a path, such as /mutate--v1-configmap)")
}

// convertCRD points crd's conversion at the local server when it is named
// in ConvertCRDs or already says strategy Webhook.
func (w *webhookInstall) convertCRD(crd *unstructured.Unstructured) error {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	named := slices.Contains(w.convert, crd.GetName())
	if named {
		w.converted = append(w.converted, crd.GetName())
	}
	if strategy != "Webhook" && !named {
		return nil
	}
	conv := map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             w.clientConfig(conversionPath),
			"conversionReviewVersions": []any{"v1"},
		},
	}
	return unstructured.SetNestedMap(crd.Object, conv, "spec", "conversion")
}

// conversionPath is package webhook's ConversionPath, kubebuilder's.
const conversionPath = "/convert"

// install creates the webhook configurations, once the CRDs are.
func (w *webhookInstall) install(ctx context.Context, cfg *rest.Config) error {
	for _, name := range w.convert {
		if !slices.Contains(w.converted, name) {
			return fmt.Errorf("CRD %s (Options.Webhook.ConvertCRDs) is not in Options.CRDDirs", name)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install webhooks: %w", err)
	}
	for _, c := range w.configs {
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource(strings.ToLower(c.GetKind()) + "s")
		if _, err := dyn.Resource(gvr).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("install %s %s: %w", c.GetKind(), c.GetName(), err)
		}
	}
	return nil
}

// admissionConfigFile is kube-apiserver's admission configuration, "" for
// none; w may be nil.
func (w *webhookInstall) admissionConfigFile() string {
	if w == nil {
		return ""
	}
	return w.admissionConfig
}
