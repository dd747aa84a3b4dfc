package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/internal/planebin"
	"github.com/opkit-dev/opkit/pkg/testenv/internal/plane"
)

// DefaultVersion is the Kubernetes version whose binaries "opkit envtest"
// (make envtest) builds and Start looks for.
const DefaultVersion = planebin.DefaultVersion

// Options configure Start. The zero value starts a control plane of
// DefaultVersion, from the binaries BinaryDir finds, with no CRDs.
type Options struct {
	// CRDDirs are directories (or files) of CustomResourceDefinition
	// manifests to install; Start returns once every CRD is established.
	// A path that does not exist is an error. Defaults to none.
	CRDDirs []string

	// BinaryDir is the directory holding kube-apiserver and etcd. Defaults to
	// what the function BinaryDir finds: KUBEBUILDER_ASSETS when set, else
	// bin/k8s/<Version>/ under the nearest directory above the working
	// directory that holds a go.mod, if it holds them, else the shared
	// per-user directory that "opkit envtest" builds into
	// (SharedBinaryDir).
	BinaryDir string

	// Version selects the binaries of that Kubernetes version when
	// BinaryDir and KUBEBUILDER_ASSETS are unset. Defaults to the
	// version VersionEnv names, else DefaultVersion (see Version).
	Version string

	// StartTimeout bounds the start of etcd and of kube-apiserver, each,
	// and then the wait for the default namespace and the CRDs together.
	// Defaults to 3 minutes: on a two-core machine under load (builds and
	// tests of several packages at once) the API server took over a
	// minute to serve its default namespace, and a start that fails then
	// fails the whole package.
	StartTimeout time.Duration

	// StopTimeout bounds the stop of each process. Defaults to 20s.
	StopTimeout time.Duration

	// Output receives the control plane's standard output and error.
	// Defaults to discarding it.
	Output io.Writer

	// Webhook installs webhook configurations and CRD conversion that the
	// API server calls on the test's own webhook server, at
	// Environment.Webhook(). Defaults to none.
	Webhook WebhookOptions

	// FeatureGates turns kube-apiserver's feature gates on (true) or off
	// (false), as its --feature-gates flag does: for example
	// {"ShardedListAndWatch": true} for server-side shard selectors, an
	// alpha gate that is off by default. A name kube-apiserver does not
	// know makes Start fail, naming it and the server's version. Gates
	// not named keep their defaults. Defaults to none.
	FeatureGates map[string]bool

	// OptionalFeatureGates are set as FeatureGates are where
	// kube-apiserver knows them, and left out where it does not (an
	// older version): for a test package whose tests run on every
	// version, some of which need a gate. Those call
	// Environment.RequireFeatureGate, which skips them, with the reason,
	// on a server without it. Defaults to none.
	OptionalFeatureGates map[string]bool
}

func (o *Options) defaults() error {
	if o.Version == "" {
		v, err := Version()
		if err != nil {
			return err
		}
		o.Version = v
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	return nil
}

// Environment is a running control plane. Its methods are safe for concurrent
// use.
type Environment struct {
	plane      *plane.ControlPlane
	config     *rest.Config
	client     kubernetes.Interface
	kubeconfig []byte
	record     string // the record of started processes that Stop removes
	bins       binaries
	// certDir holds kube-apiserver's certificates. Start makes it, so that
	// a restarted API server serves the same certificate; Stop removes it.
	certDir string
	// webhook is what Options.Webhook installs; nil without it. Stop
	// removes its CertDir.
	webhook *webhookInstall
	// gates are the feature gates kube-apiserver was started with:
	// Options.FeatureGates and the OptionalFeatureGates it knows; never
	// modified.
	gates map[string]bool
	// serverVersion and serverGates are what the running kube-apiserver
	// reported: its /version and the feature gates it knows, on or off.
	serverVersion string
	serverGates   map[string]bool
}

// Start starts etcd and kube-apiserver, waits until the API server serves the
// default namespace and installs the CRDs, then the webhooks of
// Options.Webhook. The caller must call Stop.
func Start(opts Options) (*Environment, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	bins, err := findBinaries(opts.BinaryDir, os.Getenv("KUBEBUILDER_ASSETS"), wd, opts.Version)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	crdDirs, err := crdPaths(opts.CRDDirs)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	wanted := opts.FeatureGates
	if len(opts.FeatureGates)+len(opts.OptionalFeatureGates) > 0 {
		all := maps.Clone(opts.OptionalFeatureGates)
		if all == nil {
			all = map[string]bool{}
		}
		maps.Copy(all, opts.FeatureGates)
		if _, err := plane.FormatFeatureGates(all); err != nil {
			return nil, fmt.Errorf("start control plane: Options.FeatureGates: %w", err)
		}
		known, err := knownFeatureGates(bins.apiServer)
		if err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
		if wanted, err = gatesFor(opts.FeatureGates, opts.OptionalFeatureGates, known, binaryVersion(bins.apiServer)); err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
	}
	gates, err := plane.FormatFeatureGates(wanted)
	if err != nil {
		return nil, fmt.Errorf("start control plane: Options.FeatureGates: %w", err)
	}
	wh, err := prepareWebhook(opts.Webhook)
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	reapOrphans()
	certDir, err := os.MkdirTemp("", "opkit-apiserver-")
	if err != nil {
		wh.cleanup()
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	e := &Environment{bins: bins, certDir: certDir, webhook: wh, gates: maps.Clone(wanted)}
	if err := e.start(opts, gates, crdDirs); err != nil {
		// The control plane may have started before failing (say, on a
		// bad CRD); stop it so a failed Start leaks nothing.
		return nil, fmt.Errorf("start control plane from %s: %w", filepath.Dir(bins.apiServer), errors.Join(err, e.Stop()))
	}
	return e, nil
}

func (e *Environment) start(opts Options, gates string, crdDirs []string) error {
	cp, err := plane.Start(plane.Options{
		APIServer: e.bins.apiServer, Etcd: e.bins.etcd, CertDir: e.certDir,
		StartTimeout: opts.StartTimeout, StopTimeout: opts.StopTimeout, Output: opts.Output,
		FeatureGates: gates, AdmissionConfigFile: e.webhook.admissionConfigFile(),
	})
	if err != nil {
		return err
	}
	e.plane, e.config = cp, cp.Config()
	// Without a record an orphan is not reaped later: worth a stop, as the
	// record can only fail to be written when the temp directory is broken.
	if e.record, err = recordChildren("", e.exes(), e.dirs()); err != nil {
		return fmt.Errorf("record its processes: %w", err)
	}
	if e.client, err = kubernetes.NewForConfig(e.config); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if e.kubeconfig, err = kubeconfig(e.config); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := waitForDefaultNamespace(ctx, e.client); err != nil {
		return err
	}
	if err := e.learnServer(ctx); err != nil {
		return err
	}
	if e.webhook == nil {
		return plane.InstallCRDs(ctx, e.config, crdDirs, nil)
	}
	if err := plane.InstallCRDs(ctx, e.config, crdDirs, e.webhook.convertCRD); err != nil {
		return err
	}
	return e.webhook.install(ctx, e.config)
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// port, with the same certificates and etcd, so that Config, Client and
// Kubeconfig work again once it is back and every object is still there:
// an API server restart as an operator sees one. It returns once the API
// server is healthy. It must not be called concurrently with Stop.
func (e *Environment) RestartAPIServer() error {
	if err := e.StopAPIServer(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := e.StartAPIServer(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// StopAPIServer stops kube-apiserver and leaves it stopped, etcd running,
// until StartAPIServer: an API server outage of a length the caller
// chooses. Stop needs no StartAPIServer first. It must not be called
// concurrently with the other methods that stop or start a process.
func (e *Environment) StopAPIServer() error {
	if err := e.plane.StopAPIServer(); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, as
// RestartAPIServer does, and returns once it is healthy.
func (e *Environment) StartAPIServer() error {
	if err := e.plane.StartAPIServer(); err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	// Rewriting the record adds the new kube-apiserver.
	if _, err := recordChildren(e.record, e.exes(), e.dirs()); err != nil {
		return fmt.Errorf("start kube-apiserver: record its process: %w", err)
	}
	return nil
}

// SuspendEtcd freezes etcd (SIGSTOP) until ResumeEtcd: kube-apiserver
// runs on, but requests that reach etcd hang and then fail, as with an
// etcd that is stuck or cut off. Stop resumes it first. It needs a Unix
// system, and must not be called concurrently with Stop.
func (e *Environment) SuspendEtcd() error {
	if err := e.plane.SuspendEtcd(); err != nil {
		return fmt.Errorf("suspend etcd: %w", err)
	}
	return nil
}

// ResumeEtcd resumes etcd after SuspendEtcd (SIGCONT).
func (e *Environment) ResumeEtcd() error {
	if err := e.plane.ResumeEtcd(); err != nil {
		return fmt.Errorf("resume etcd: %w", err)
	}
	return nil
}

// exes returns the programs the environment runs.
func (e *Environment) exes() []string { return []string{e.bins.apiServer, e.bins.etcd} }

// dirs returns the directories the environment made, which Stop removes.
func (e *Environment) dirs() []string {
	var dirs []string
	if e.plane != nil && e.plane.DataDir() != "" {
		dirs = append(dirs, e.plane.DataDir())
	}
	dirs = append(dirs, e.certDir)
	if e.webhook != nil && e.webhook.server.CertDir != "" {
		dirs = append(dirs, e.webhook.server.CertDir)
	}
	return dirs
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	if e.plane != nil {
		if err := e.plane.Stop(); err != nil {
			return fmt.Errorf("stop control plane: %w", err)
		}
	}
	_ = os.RemoveAll(e.certDir)
	e.webhook.cleanup()
	if e.record != "" {
		_ = os.Remove(e.record)
	}
	return nil
}

// Config returns a new copy of the admin REST config for the control plane;
// the caller may change it.
func (e *Environment) Config() *rest.Config {
	return rest.CopyConfig(e.config)
}

// FeatureGates returns a copy of the feature gates kube-apiserver was
// started with: Options.FeatureGates and the OptionalFeatureGates it
// knows. RestartAPIServer keeps them. FeatureGate and RequireFeatureGate
// say what the server has on, whether asked for or by default.
func (e *Environment) FeatureGates() map[string]bool {
	return maps.Clone(e.gates)
}

// Client returns a clientset for the control plane, authenticated as admin.
func (e *Environment) Client() kubernetes.Interface {
	return e.client
}

// Kubeconfig returns a kubeconfig file's contents that reach the control plane
// as admin.
func (e *Environment) Kubeconfig() []byte {
	return e.kubeconfig
}

// WriteKubeconfig writes Kubeconfig to path, readable by the owner only,
// creating its directory if needed.
func (e *Environment) WriteKubeconfig(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, e.kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

func crdPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("resolve CRD path %q: %w", p, err)
		}
		// Checked before any process starts, so a typo costs no start-up.
		if _, err := os.Stat(a); err != nil {
			return nil, fmt.Errorf("CRD path %q (Options.CRDDirs): %w", p, err)
		}
		out = append(out, a)
	}
	return out, nil
}
