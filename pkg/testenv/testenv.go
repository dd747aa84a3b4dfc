package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// DefaultVersion is the Kubernetes version whose binaries hack/setup-envtest.sh
// builds and Start looks for under bin/k8s/.
const DefaultVersion = "1.37.1"

// Options configure Start. The zero value starts a control plane from the
// binaries in bin/k8s/DefaultVersion/ with no CRDs.
type Options struct {
	// CRDDirs are directories (or files) of CustomResourceDefinition
	// manifests to install; Start returns once every CRD is established.
	// A path that does not exist is an error. Defaults to none.
	CRDDirs []string

	// BinaryDir is the directory holding kube-apiserver and etcd. Defaults to
	// KUBEBUILDER_ASSETS when set, else bin/k8s/<Version>/ under the nearest
	// directory above the working directory that holds a go.mod.
	BinaryDir string

	// Version selects bin/k8s/<Version>/ when BinaryDir and
	// KUBEBUILDER_ASSETS are unset. Defaults to DefaultVersion.
	Version string

	// StartTimeout bounds the start of etcd and of kube-apiserver, each.
	// Defaults to 60s.
	StartTimeout time.Duration

	// StopTimeout bounds the stop of each process. Defaults to 20s.
	StopTimeout time.Duration

	// Output receives the control plane's standard output and error.
	// Defaults to discarding it.
	Output io.Writer
}

// Environment is a running control plane. Its methods are safe for concurrent
// use.
type Environment struct {
	env    *envtest.Environment
	config *rest.Config
	client kubernetes.Interface
	record string // the record of started processes that Stop removes
	bins   binaries
	// certDir holds kube-apiserver's certificates. Start makes it, so that
	// a restarted API server serves the same certificate; Stop removes it.
	certDir string
}

// Start starts etcd and kube-apiserver, waits until the API server serves the
// default namespace and installs the CRDs. The caller must call Stop.
func Start(opts Options) (*Environment, error) {
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 20 * time.Second
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

	reapOrphans()
	certDir, err := os.MkdirTemp("", "opkit-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  opts.StopTimeout,
	}
	env.ControlPlane.GetAPIServer().Path = bins.apiServer
	env.ControlPlane.GetAPIServer().CertDir = certDir
	// Without it, a stopping kube-apiserver waits for its clients to end
	// their watches, which an operator never does: the stop times out.
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-watch-termination-grace-period", "2s")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: bins.etcd}
	if opts.Output != nil {
		api := env.ControlPlane.GetAPIServer()
		api.Out, api.Err = opts.Output, opts.Output
		env.ControlPlane.Etcd.Out, env.ControlPlane.Etcd.Err = opts.Output, opts.Output
	}

	cfg, err := env.Start()
	if err != nil {
		// envtest may have started processes before failing (say, on a bad
		// CRD); stop them so a failed Start leaks nothing.
		return nil, fmt.Errorf("start control plane from %s: %w", filepath.Dir(bins.apiServer), errors.Join(err, env.Stop(), os.RemoveAll(certDir)))
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("start control plane: create client: %w", errors.Join(err, env.Stop(), os.RemoveAll(certDir)))
	}
	// Without a record an orphan is not reaped later: worth a stop, as the
	// record can only fail to be written when the temp directory is broken.
	record, err := recordChildren(bins.apiServer, bins.etcd)
	if err != nil {
		return nil, fmt.Errorf("start control plane: record its processes: %w", errors.Join(err, env.Stop(), os.RemoveAll(certDir)))
	}
	return &Environment{env: env, config: cfg, client: client, record: record, bins: bins, certDir: certDir}, nil
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// port, with the same certificates and etcd, so that Config, Client and
// Kubeconfig work again once it is back and every object is still there:
// an API server restart as an operator sees one. It returns once the API
// server is healthy. It must not be called concurrently with Stop.
func (e *Environment) RestartAPIServer() error {
	api := e.env.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil {
		return fmt.Errorf("restart kube-apiserver: stop: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("restart kube-apiserver: start: %w", err)
	}
	// The record's path depends on this process only: rewriting it adds
	// the new kube-apiserver.
	if _, err := recordChildren(e.bins.apiServer, e.bins.etcd); err != nil {
		return fmt.Errorf("restart kube-apiserver: record its process: %w", err)
	}
	return nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stop control plane: %w", err)
	}
	_ = os.RemoveAll(e.certDir)
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

// Client returns a clientset for the control plane, authenticated as admin.
func (e *Environment) Client() kubernetes.Interface {
	return e.client
}

// Kubeconfig returns a kubeconfig file's contents that reach the control plane
// as admin.
func (e *Environment) Kubeconfig() []byte {
	return e.env.KubeConfig
}

// WriteKubeconfig writes Kubeconfig to path, readable by the owner only,
// creating its directory if needed.
func (e *Environment) WriteKubeconfig(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, e.env.KubeConfig, 0o600); err != nil {
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
