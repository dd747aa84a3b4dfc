package certs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultCALifetime     = 10 * 365 * 24 * time.Hour
	DefaultCertLifetime   = 365 * 24 * time.Hour
	DefaultResyncInterval = time.Minute

	// MinLifetime is the shortest CALifetime or CertLifetime New accepts:
	// certificates are backdated by minutes for clock skew, so a much
	// shorter one would be due for renewal as soon as it is made.
	MinLifetime = time.Hour
)

// retryInterval is how soon Start tries again after a failed sync, unless
// ResyncInterval is shorter: soon enough that a transient error at start
// does not keep readiness down for a whole resync.
const retryInterval = 5 * time.Second

// ErrInvalidOptions is wrapped by the error New returns for options it
// cannot work with.
var ErrInvalidOptions = errors.New("invalid certificate options")

// DefaultCertDir is where controller-runtime's webhook server looks for its
// certificate by default (webhook.Options.CertDir):
// $TMPDIR/k8s-webhook-server/serving-certs.
func DefaultCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Options configure New. Either Service or Hosts must be set, and CASecret
// must be.
type Options struct {
	// CASecret is the Secret (type kubernetes.io/tls) that holds the CA:
	// its certificate in tls.crt, its key in tls.key, and the bundle the
	// API server must trust in ca.crt. Every replica of the operator
	// shares it. Created when missing. Required.
	CASecret types.NamespacedName

	// Service is the webhook Service: the serving certificate names
	// <name>.<namespace>.svc and <name>.<namespace>.svc.cluster.local.
	// Defaults to none, which then needs Hosts.
	Service types.NamespacedName

	// Hosts are further DNS names or IP addresses (an IP literal becomes an
	// IP SAN) for the serving certificate, say 127.0.0.1 for a webhook the
	// API server reaches by URL. Defaults to none.
	Hosts []string

	// CertDir is the directory the serving certificate is written to, as
	// CertFile and KeyFile; it must be writable (an emptyDir in a pod with
	// a read-only root filesystem). Defaults to DefaultCertDir().
	CertDir string

	// CALifetime is how long a new CA is valid. It is replaced two thirds
	// into its life. At least MinLifetime. Defaults to DefaultCALifetime
	// (ten years).
	CALifetime time.Duration

	// CertLifetime is how long a serving certificate is valid, never beyond
	// its CA. It is renewed two thirds into its life. At least MinLifetime
	// and shorter than CALifetime. Defaults to DefaultCertLifetime (a year).
	CertLifetime time.Duration

	// Targets are the objects whose caBundle is kept equal to the CA bundle.
	// Defaults to none.
	Targets Targets

	// ResyncInterval is how often the CA Secret is read again and the
	// Targets' caBundles checked and repaired, so a caBundle someone reset,
	// or a CA another replica rotated, is put right within it. Defaults to
	// DefaultResyncInterval (a minute).
	//
	// A resync rather than a watch: a watch would repair a reset sooner
	// but would need an informer per kind and list and watch permissions;
	// a resync costs one GET per target and one of the Secret per
	// interval, and bounds both repairs by the same interval.
	ResyncInterval time.Duration

	// Clock tells the time for validity and schedules the resyncs.
	// Defaults to the real clock.
	Clock clock.Clock

	// Logger logs rotations and failed syncs. Defaults to discarding.
	Logger logr.Logger
}

// Targets name the cluster-scoped objects that carry the CA bundle.
type Targets struct {
	// MutatingWebhooks are MutatingWebhookConfigurations: every webhook in
	// each gets the bundle.
	MutatingWebhooks []string
	// ValidatingWebhooks are ValidatingWebhookConfigurations: every webhook
	// in each gets the bundle.
	ValidatingWebhooks []string
	// CRDs are CustomResourceDefinitions whose conversion webhook
	// (spec.conversion.webhook.clientConfig) gets the bundle; their
	// spec.conversion.strategy must be Webhook.
	CRDs []string
}

func (o *Options) defaults() {
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir()
	}
	if o.CALifetime == 0 {
		o.CALifetime = DefaultCALifetime
	}
	if o.CertLifetime == 0 {
		o.CertLifetime = DefaultCertLifetime
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultResyncInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.CASecret.Name == "" || o.CASecret.Namespace == "" {
		errs = append(errs, errors.New("CASecret needs a namespace and a name"))
	}
	if (o.Service.Name == "") != (o.Service.Namespace == "") {
		errs = append(errs, errors.New("the Service needs both a namespace and a name"))
	}
	if o.Service.Name == "" && len(o.Hosts) == 0 {
		errs = append(errs, errors.New("set Service or Hosts: the serving certificate needs a name"))
	}
	if o.CALifetime < 0 || o.CertLifetime < 0 || o.ResyncInterval < 0 {
		errs = append(errs, errors.New("CALifetime, CertLifetime and ResyncInterval must not be negative"))
	}
	if (o.CALifetime > 0 && o.CALifetime < MinLifetime) || (o.CertLifetime > 0 && o.CertLifetime < MinLifetime) {
		errs = append(errs, fmt.Errorf("CALifetime and CertLifetime must be at least MinLifetime (%s)", MinLifetime))
	}
	if o.CertLifetime >= o.CALifetime {
		errs = append(errs, fmt.Errorf("CertLifetime (%s) must be shorter than CALifetime (%s)", o.CertLifetime, o.CALifetime))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// hosts lists the serving certificate's names: the Service's first, then
// Hosts.
func (o *Options) hosts() []string {
	var h []string
	if s := o.Service; s.Name != "" {
		h = append(h, s.Name+"."+s.Namespace+".svc", s.Name+"."+s.Namespace+".svc.cluster.local")
	}
	return append(h, o.Hosts...)
}
