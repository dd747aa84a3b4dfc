package crport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// ManagerOptions is opkit's manager.Options for controller-runtime's o, as
// an operator built them at run time: from a config file (jobset's and
// lws's Configuration), its flags, or both. It is what the port of such a
// main gives manager.New in place of ctrl.NewManager's options.
//
// It maps the scheme, the logger (controller-runtime's ctrl.Log when
// unset, as its manager), leader election (its ID, namespace, durations
// and release on cancel; the resource lock must be leases), the metrics
// server (bind address, secure serving and its filter, which opkit's
// Metrics.Secure always applies, and its certificate directory), the
// health probes' address, pprof on the metrics address, the webhook
// server that webhook.NewServer made (host, port, certificate directory,
// client CA and TLS options), the cache's default namespaces, the cache
// sync timeout and the graceful shutdown timeout.
//
// Anything else that is set, or set to what opkit does otherwise (another
// certificate file name, other TLS settings for metrics than HTTP/2 off,
// which opkit's metrics server never serves, another probe path, a cache
// selector, a controller default), is an error naming each field, rather
// than an option silently dropped: set its counterpart in the returned
// options instead, or see the porting guide.
func ManagerOptions(o ctrl.Options) (manager.Options, error) {
	var out manager.Options
	var errs []string
	bad := func(field, why string) { errs = append(errs, "ctrl.Options."+field+": "+why) }
	handled := map[string]bool{}
	take := func(fields ...string) {
		for _, f := range fields {
			handled[f] = true
		}
	}

	take("Scheme", "Logger")
	out.Scheme = o.Scheme
	out.Logger = o.Logger
	if o.Logger.GetSink() == nil {
		out.Logger = ctrl.Log
	}

	take("LeaderElection", "LeaderElectionID", "LeaderElectionNamespace", "LeaderElectionReleaseOnCancel", "LeaseDuration", "RenewDeadline", "RetryPeriod", "LeaderElectionResourceLock")
	out.LeaderElection.Enabled = o.LeaderElection
	out.LeaderElection.Name = o.LeaderElectionID
	out.LeaderElection.Namespace = o.LeaderElectionNamespace
	out.LeaderElection.ReleaseOnCancel = o.LeaderElectionReleaseOnCancel
	if o.LeaseDuration != nil {
		out.LeaderElection.LeaseDuration = *o.LeaseDuration
	}
	if o.RenewDeadline != nil {
		out.LeaderElection.RenewDeadline = *o.RenewDeadline
	}
	if o.RetryPeriod != nil {
		out.LeaderElection.RetryPeriod = *o.RetryPeriod
	}
	if l := o.LeaderElectionResourceLock; l != "" && l != "leases" {
		bad("LeaderElectionResourceLock", fmt.Sprintf("%q: opkit's leader election holds a Lease (\"leases\")", l))
	}

	take("Metrics")
	m := o.Metrics
	out.Metrics.BindAddress = m.BindAddress
	out.Metrics.Secure = m.SecureServing || m.FilterProvider != nil
	out.Metrics.CertDir = m.CertDir
	certFiles(m.CertName, m.KeyName, "Metrics.CertName", "Metrics.KeyName", bad)
	if err := onlyHTTP1(m.TLSOpts); err != nil {
		bad("Metrics.TLSOpts", err.Error()+": opkit's metrics server sets its own TLS (1.2 or later, HTTP/1.1)")
	}
	if len(m.ExtraHandlers) > 0 {
		paths := make([]string, 0, len(m.ExtraHandlers))
		for p := range m.ExtraHandlers {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		bad("Metrics.ExtraHandlers", strings.Join(paths, ", ")+": opkit's metrics server serves /metrics and, with Metrics.Pprof, /debug/pprof/ only")
	}
	if len(m.HandlerOpts) > 0 {
		bad("Metrics.HandlerOpts", "opkit's /metrics handler takes no options")
	}
	if !reflect.ValueOf(m.ListenConfig).IsZero() {
		bad("Metrics.ListenConfig", "opkit listens with the defaults")
	}

	take("HealthProbeBindAddress", "ReadinessEndpointName", "LivenessEndpointName", "PprofBindAddress")
	out.Health.BindAddress = o.HealthProbeBindAddress
	if n := o.ReadinessEndpointName; n != "" && n != "/readyz" {
		bad("ReadinessEndpointName", fmt.Sprintf("%q: opkit serves readiness at /readyz", n))
	}
	if n := o.LivenessEndpointName; n != "" && n != "/healthz" {
		bad("LivenessEndpointName", fmt.Sprintf("%q: opkit serves liveness at /healthz", n))
	}
	switch p := o.PprofBindAddress; {
	case p == "" || p == "0":
	case p == m.BindAddress:
		out.Metrics.Pprof = true
	default:
		bad("PprofBindAddress", fmt.Sprintf("%q: opkit serves pprof beside /metrics, at the metrics address (Metrics.Pprof)", p))
	}

	take("WebhookServer")
	switch s := o.WebhookServer.(type) {
	case nil:
	case *crwebhook.DefaultServer:
		w := s.Options
		out.Webhook.Host = w.Host
		out.Webhook.Port = w.Port
		if out.Webhook.Port == 0 {
			out.Webhook.Port = crwebhook.DefaultPort
		}
		out.Webhook.CertDir = w.CertDir
		// controller-runtime's server starts when the first webhook asks for it.
		out.Webhook.StartOnRegister = true
		certFiles(w.CertName, w.KeyName, "WebhookServer.Options.CertName", "WebhookServer.Options.KeyName", bad)
		if w.ClientCAName != "" {
			dir := w.CertDir
			if dir == "" {
				dir = manager.DefaultWebhookCertDir()
			}
			out.Webhook.ClientCAFile = filepath.Join(dir, w.ClientCAName)
		}
		out.Webhook.TLSOpts = w.TLSOpts
		if w.WebhookMux != nil {
			bad("WebhookServer.Options.WebhookMux", "opkit's webhook server has its own mux: register handlers with webhook.Serve")
		}
	default:
		bad("WebhookServer", fmt.Sprintf("a %T: only one webhook.NewServer made maps to opkit's", s))
	}

	take("Cache")
	c := o.Cache
	for ns := range c.DefaultNamespaces {
		out.Cache.Namespaces = append(out.Cache.Namespaces, ns)
	}
	sort.Strings(out.Cache.Namespaces)
	cv := reflect.ValueOf(c)
	for i := range cv.NumField() {
		name := cv.Type().Field(i).Name
		if name == "DefaultNamespaces" || name == "Scheme" || cv.Field(i).IsZero() {
			continue
		}
		bad("Cache."+name, "opkit's cache.Options has no such option: set its counterpart in the returned Options.Cache (docs/porting-from-controller-runtime.md)")
	}
	for ns, cfg := range c.DefaultNamespaces {
		if !reflect.ValueOf(cfg).IsZero() {
			bad("Cache.DefaultNamespaces["+ns+"]", "per-namespace selectors and transforms: opkit's cache takes namespaces only")
		}
	}

	take("Controller", "GracefulShutdownTimeout")
	out.CacheSyncTimeout = o.Controller.CacheSyncTimeout
	ctl := reflect.ValueOf(o.Controller)
	for i := range ctl.NumField() {
		name := ctl.Type().Field(i).Name
		if name == "CacheSyncTimeout" || ctl.Field(i).IsZero() {
			continue
		}
		bad("Controller."+name, "a default for every controller, which opkit sets per controller (manager.WithOptions)")
	}
	if o.GracefulShutdownTimeout != nil {
		out.ShutdownTimeout = *o.GracefulShutdownTimeout
	}

	// Whatever else is set has no counterpart.
	ov := reflect.ValueOf(o)
	for i := range ov.NumField() {
		name := ov.Type().Field(i).Name
		if handled[name] || ov.Field(i).IsZero() {
			continue
		}
		bad(name, "opkit's manager.Options has no such option")
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return out, errors.New("crport: controller-runtime's manager options that opkit's manager does not take as they are:\n  " + strings.Join(errs, "\n  "))
	}
	return out, nil
}

// certFiles checks that a server's certificate and key file names are the
// ones opkit reads from its directory.
func certFiles(crt, key, crtField, keyField string, bad func(field, why string)) {
	if crt != "" && crt != manager.WebhookCertFile {
		bad(crtField, fmt.Sprintf("%q: opkit reads %s from the directory: rename the file, or mount it under that name", crt, manager.WebhookCertFile))
	}
	if key != "" && key != manager.WebhookKeyFile {
		bad(keyField, fmt.Sprintf("%q: opkit reads %s from the directory: rename the file, or mount it under that name", key, manager.WebhookKeyFile))
	}
}

// onlyHTTP1 says whether TLS options do no more than turn HTTP/2 off,
// as kubebuilder's main does: applied to an empty tls.Config, they set
// nothing but NextProtos to http/1.1.
func onlyHTTP1(opts []func(*tls.Config)) error {
	c := &tls.Config{}
	for _, o := range opts {
		o(c)
	}
	if len(c.NextProtos) == 1 && c.NextProtos[0] == "http/1.1" {
		c.NextProtos = nil
	}
	if !reflect.ValueOf(c).Elem().IsZero() {
		return errors.New("they set more than HTTP/2 off")
	}
	return nil
}
