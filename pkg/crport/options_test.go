package crport_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/pkg/crport"
)

// authn stands for controller-runtime's filters.WithAuthenticationAndAuthorization,
// whose package needs k8s.io/apiserver.
func authn(*rest.Config, *http.Client) (metricsserver.Filter, error) { return nil, nil }

// The options jobset's main builds from its Configuration and flags map to
// opkit's field by field.
func TestManagerOptionsMapsAConfigFilesOptions(t *testing.T) {
	scheme := runtime.NewScheme()
	lease, renew, retry, shutdown := 15*time.Second, 10*time.Second, 2*time.Second, 40*time.Second
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	webhookTLS := func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }
	o := ctrl.Options{
		Scheme:                        scheme,
		LeaderElection:                true,
		LeaderElectionID:              "6d4f6a47.jobset.x-k8s.io",
		LeaderElectionNamespace:       "jobset-system",
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Metrics: metricsserver.Options{
			BindAddress:    ":8443",
			SecureServing:  true,
			FilterProvider: authn, // as filters.WithAuthenticationAndAuthorization
			TLSOpts:        []func(*tls.Config){disableHTTP2},
			CertDir:        "/tmp/k8s-metrics-server/serving-certs",
			CertName:       "tls.crt",
			KeyName:        "tls.key",
		},
		HealthProbeBindAddress: ":8081",
		ReadinessEndpointName:  "/readyz",
		LivenessEndpointName:   "/healthz",
		PprofBindAddress:       ":8443",
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Port: 9443, Host: "0.0.0.0", CertDir: "/certs", ClientCAName: "ca.crt",
			TLSOpts: []func(*tls.Config){disableHTTP2, webhookTLS},
		}),
		Cache:                   crcache.Options{DefaultNamespaces: map[string]crcache.Config{"b": {}, "a": {}}},
		Controller:              config.Controller{CacheSyncTimeout: time.Minute},
		GracefulShutdownTimeout: &shutdown,
	}
	got, err := crport.ManagerOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	le := got.LeaderElection
	if !le.Enabled || le.Name != o.LeaderElectionID || le.Namespace != "jobset-system" || !le.ReleaseOnCancel || le.LeaseDuration != lease || le.RenewDeadline != renew || le.RetryPeriod != retry {
		t.Errorf("leader election %+v, want ctrl.Options' %+v", le, o)
	}
	if m := got.Metrics; m.BindAddress != ":8443" || !m.Secure || m.CertDir != "/tmp/k8s-metrics-server/serving-certs" || !m.Pprof {
		t.Errorf("metrics %+v, want :8443, secure, the certificate directory and pprof", m)
	}
	if got.Health.BindAddress != ":8081" {
		t.Errorf("health probes at %q, want :8081", got.Health.BindAddress)
	}
	w := got.Webhook
	if w.Port != 9443 || w.Host != "0.0.0.0" || w.CertDir != "/certs" || w.ClientCAFile != filepath.Join("/certs", "ca.crt") || len(w.TLSOpts) != 2 || !w.StartOnRegister {
		t.Errorf("webhook %+v, want port 9443 on 0.0.0.0, /certs, its client CA and both TLS options, started by its first handler", w)
	}
	if strings.Join(got.Cache.Namespaces, ",") != "a,b" {
		t.Errorf("cache namespaces %v, want [a b]", got.Cache.Namespaces)
	}
	if got.Scheme != scheme || got.CacheSyncTimeout != time.Minute || got.ShutdownTimeout != shutdown {
		t.Errorf("scheme, cache sync and shutdown timeouts %p %v %v, want %p %v %v", got.Scheme, got.CacheSyncTimeout, got.ShutdownTimeout, scheme, time.Minute, shutdown)
	}
	if got.Logger.GetSink() == nil {
		t.Error("no logger: controller-runtime's manager logs through ctrl.Log when Options.Logger is unset")
	}
	// A webhook server's port defaults as controller-runtime's does.
	got, err = crport.ManagerOptions(ctrl.Options{WebhookServer: crwebhook.NewServer(crwebhook.Options{})})
	if err != nil || got.Webhook.Port != crwebhook.DefaultPort {
		t.Errorf("webhook port %d, %v; want controller-runtime's default %d", got.Webhook.Port, err, crwebhook.DefaultPort)
	}
}

// What opkit's manager does not take as it is, is an error naming each
// field, rather than an option the port's operator silently runs without.
func TestManagerOptionsRefusesWhatItCannotMap(t *testing.T) {
	sync := time.Hour
	o := ctrl.Options{
		LeaderElectionResourceLock: "configmapsleases",
		Metrics: metricsserver.Options{
			ExtraHandlers: map[string]http.Handler{"/debug/vars": http.NotFoundHandler()},
			TLSOpts:       []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }},
			CertName:      "metrics.pem",
		},
		ReadinessEndpointName: "/ready",
		PprofBindAddress:      ":6060",
		WebhookServer:         crwebhook.NewServer(crwebhook.Options{KeyName: "key.pem", WebhookMux: http.NewServeMux()}),
		Cache:                 crcache.Options{SyncPeriod: &sync},
		Controller:            config.Controller{MaxConcurrentReconciles: 4},
		NewClient:             nil,
		BaseContext:           func() context.Context { return context.Background() },
	}
	_, err := crport.ManagerOptions(o)
	if err == nil {
		t.Fatal("no error")
	}
	for _, field := range []string{
		"ctrl.Options.LeaderElectionResourceLock: \"configmapsleases\"",
		"ctrl.Options.Metrics.ExtraHandlers: /debug/vars",
		"ctrl.Options.Metrics.TLSOpts: they set more than HTTP/2 off",
		"ctrl.Options.Metrics.CertName: \"metrics.pem\"",
		"ctrl.Options.ReadinessEndpointName: \"/ready\"",
		"ctrl.Options.PprofBindAddress: \":6060\"",
		"ctrl.Options.WebhookServer.Options.KeyName: \"key.pem\"",
		"ctrl.Options.WebhookServer.Options.WebhookMux",
		"ctrl.Options.Cache.SyncPeriod",
		"ctrl.Options.Controller.MaxConcurrentReconciles",
		"ctrl.Options.BaseContext: opkit's manager.Options has no such option",
	} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %q:\n%v", field, err)
		}
	}
}
