package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook/certs"
)

// Values of --webhook-certs.
const (
	// certsSelfManaged: a certs.Rotator keeps a CA Secret, writes the
	// serving certificate into --webhook-cert-dir and patches the caBundles.
	certsSelfManaged = "self-managed"
	// certsMounted: the serving certificate is a Secret mounted at
	// --webhook-cert-dir (cert-manager's, say), whose caBundles someone
	// else fills (cert-manager's cainjector).
	certsMounted = "mounted"
)

// Defaults of the webhook flags: the names config/default renders (its
// namePrefix "mirror-" on controller-gen's and kubebuilder's names).
const (
	defaultWebhookPort      = 9443
	defaultWebhookService   = "mirror-webhook-service"
	defaultWebhookCA        = "mirror-webhook-ca"
	defaultValidatingConfig = "mirror-validating-webhook-configuration"
	defaultConversionCRD    = "mirrors.samples.opkit.dev"
)

// podNamespaceFile is where a pod finds its own namespace.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// webhookFlags configure the webhook server and its certificates.
type webhookFlags struct {
	port       int
	host       string // "" is every address; --local serves on 127.0.0.1
	certDir    string
	certs      string
	namespace  string // of the Service and the CA Secret; "" is the pod's
	service    string
	caSecret   string
	validating string
	crd        string
	clientCA   string // "": any client may call
}

func (w *webhookFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&w.port, "webhook-port", defaultWebhookPort, "port of the admission and conversion webhook server (HTTPS); 0 turns it off")
	fs.StringVar(&w.certDir, "webhook-cert-dir", manager.DefaultWebhookCertDir(), "directory of the webhook server's tls.crt and tls.key")
	fs.StringVar(&w.certs, "webhook-certs", certsSelfManaged, `where the webhook certificate comes from: "self-managed" (the operator keeps a CA Secret, writes the certificate into --webhook-cert-dir and patches the caBundles) or "mounted" (a Secret mounted at --webhook-cert-dir, say cert-manager's)`)
	fs.StringVar(&w.namespace, "webhook-namespace", "", "with self-managed certificates: namespace of the webhook Service and the CA Secret; defaults to the pod's")
	fs.StringVar(&w.service, "webhook-service-name", defaultWebhookService, "with self-managed certificates: the webhook Service, which the serving certificate names")
	fs.StringVar(&w.caSecret, "webhook-ca-secret", defaultWebhookCA, "with self-managed certificates: the Secret that holds the CA, created when missing")
	fs.StringVar(&w.validating, "validating-webhook-configuration", defaultValidatingConfig, `with self-managed certificates: the ValidatingWebhookConfiguration whose caBundle is kept; "" for none`)
	fs.StringVar(&w.clientCA, "webhook-client-ca", "", "PEM file of the CA whose client certificates the webhook server accepts, such as the API server's webhook client certificate's (docs/webhooks.md, \"Who may call the webhooks\"); admission paths refuse callers without one. Empty: any client may call")
	fs.StringVar(&w.crd, "conversion-crd", defaultConversionCRD, `with self-managed certificates: the CRD whose conversion webhook's caBundle is kept; "" for none`)
}

// selfManagedFlags are the flags that only self-managed certificates use.
var selfManagedFlags = []string{"webhook-namespace", "webhook-service-name", "webhook-ca-secret", "validating-webhook-configuration", "conversion-crd"}

// check refuses combinations that would be ignored or cannot work; set
// holds the flags given on the command line.
func (w *webhookFlags) check(set map[string]bool) error {
	given := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if set[n] {
				out = append(out, "--"+n)
			}
		}
		return out
	}
	ignoredWhenOff := given(append([]string{"webhook-cert-dir", "webhook-certs", "webhook-client-ca"}, selfManagedFlags...)...)
	switch {
	case w.port < 0 || w.port > 65535:
		return fmt.Errorf("--webhook-port is %d: want a port from 1 to 65535, or 0 to turn the webhook server off", w.port)
	case w.port == 0 && len(ignoredWhenOff) > 0:
		return fmt.Errorf("--webhook-port=0 turns the webhook server off, so %s would do nothing: drop them or set the port",
			strings.Join(ignoredWhenOff, ", "))
	case w.certs != certsSelfManaged && w.certs != certsMounted:
		return fmt.Errorf("--webhook-certs is %q: want %q or %q", w.certs, certsSelfManaged, certsMounted)
	case w.certs == certsMounted && len(given(selfManagedFlags...)) > 0:
		return fmt.Errorf("--webhook-certs=mounted takes the certificate as mounted, so %s would do nothing: drop them or use --webhook-certs=self-managed",
			strings.Join(given(selfManagedFlags...), ", "))
	case w.certDir == "":
		return errors.New("--webhook-cert-dir is empty: name the directory of tls.crt and tls.key")
	case w.port != 0 && w.certs == certsSelfManaged && (w.service == "" || w.caSecret == ""):
		return errors.New("--webhook-service-name and --webhook-ca-secret must not be empty with --webhook-certs=self-managed")
	}
	return nil
}

// options are the manager's webhook options: none with --webhook-port=0.
func (w *webhookFlags) options() manager.WebhookOptions {
	if w.port == 0 {
		return manager.WebhookOptions{}
	}
	return manager.WebhookOptions{Port: w.port, Host: w.host, CertDir: w.certDir, ClientCAFile: w.clientCA}
}

// localNoWebhooks is the port that tells startLocal to install no
// webhooks: --local with --webhook-port=0.
const localNoWebhooks = -1

// checkLocal checks the webhook flags of --local, whose control plane
// installs the webhooks and makes their certificates, the API server's
// client certificate included: only --webhook-port applies. Unset, startLocal picks a free port; 0 becomes localNoWebhooks.
func (w *webhookFlags) checkLocal(set map[string]bool) error {
	var given []string
	for _, n := range append([]string{"webhook-cert-dir", "webhook-certs", "webhook-client-ca"}, selfManagedFlags...) {
		if set[n] {
			given = append(given, "--"+n)
		}
	}
	switch {
	case len(given) > 0:
		return fmt.Errorf("--local installs the webhooks on its control plane with a certificate of its own, so %s would do nothing: drop them (--webhook-port applies)",
			strings.Join(given, ", "))
	case w.port < 0 || w.port > 65535:
		return fmt.Errorf("--webhook-port is %d: want a port from 1 to 65535, or 0 to turn the webhook server off", w.port)
	case !set["webhook-port"]:
		w.port = 0
	case w.port == 0:
		w.port = localNoWebhooks
	}
	return nil
}

// rotatorOptions are the certs.Options of a self-managed rotator.
func (w *webhookFlags) rotatorOptions(log logr.Logger) (certs.Options, error) {
	ns := w.namespace
	if ns == "" {
		b, err := os.ReadFile(podNamespaceFile)
		if err != nil {
			return certs.Options{}, fmt.Errorf("find the pod's namespace for the webhook Service and CA Secret (outside a pod, set --webhook-namespace): %w", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	opts := certs.Options{
		CASecret: types.NamespacedName{Namespace: ns, Name: w.caSecret},
		Service:  types.NamespacedName{Namespace: ns, Name: w.service},
		CertDir:  w.certDir,
		Logger:   log.WithName("webhook-certificates"),
	}
	if w.validating != "" {
		opts.Targets.ValidatingWebhooks = []string{w.validating}
	}
	if w.crd != "" {
		opts.Targets.CRDs = []string{w.crd}
	}
	return opts, nil
}

// registerWebhooks calls each register (mirror.SetupWebhooks with a
// Policy, say) to register handlers on mgr's webhook server, unless
// --webhook-port=0 turned the server off.
func registerWebhooks(mgr *manager.Manager, register ...func(*manager.Manager) error) error {
	if mgr.WebhookServer() == nil {
		return nil
	}
	for _, r := range register {
		if err := r(mgr); err != nil {
			return fmt.Errorf("register webhooks: %w", err)
		}
	}
	return nil
}

// startCertificates syncs the self-managed certificates once, so that the
// certificate is in --webhook-cert-dir before the webhook server serves
// (the manager refuses to start without it), then keeps them in sync until
// ctx ends. A first sync that fails ends the operator with its error, which
// says what is missing (a permission, a target): the kubelet restarts it,
// and nothing is served meanwhile with a certificate the API server does
// not trust. The rotator's check joins /readyz as "webhook-certificate".
// The returned function stops the rotator and waits for it: Start may
// return while ctx goes on (a lost lease, a failed runnable).
func startCertificates(ctx context.Context, cfg *rest.Config, mgr *manager.Manager, w webhookFlags, log logr.Logger) (stop func(), err error) {
	if w.port == 0 || w.certs != certsSelfManaged {
		return func() {}, nil
	}
	opts, err := w.rotatorOptions(log)
	if err != nil {
		return nil, err
	}
	rot, err := certs.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.AddReadyCheck("webhook-certificate", rot.Check); err != nil {
		return nil, err
	}
	if err := rot.Sync(ctx); err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) && ctx.Err() == nil {
			return nil, fmt.Errorf("make the webhook certificate: the API server at %s does not answer (is it running, and is this the kubeconfig you meant?): %w: %w", cfg.Host, manager.ErrUnreachable, err)
		}
		return nil, fmt.Errorf("make the webhook certificate (--webhook-certs=self-managed; or turn the webhook server off with --webhook-port=0): %w", err)
	}
	log.Info("Webhook certificate ready", "caSecret", opts.CASecret.String(), "service", opts.Service.String(), "certDir", opts.CertDir)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rot.Start(ctx) // nil when ctx ends; a failed sync is logged and retried
	}()
	return func() { cancel(); <-done }, nil
}
