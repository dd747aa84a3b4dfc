package plane

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

const host = "127.0.0.1"

// Options say where the programs are and how long to wait for them.
type Options struct {
	APIServer, Etcd string // paths of the executables
	// CertDir holds kube-apiserver's certificates; it must exist.
	CertDir      string
	StartTimeout time.Duration
	StopTimeout  time.Duration
	Output       io.Writer // both programs' output; nil discards it
	// FeatureGates is kube-apiserver's --feature-gates value, "" for
	// none; FormatFeatureGates writes it.
	FeatureGates string
	// AdmissionConfigFile is kube-apiserver's
	// --admission-control-config-file, "" for none;
	// WriteWebhookClientAuth writes one.
	AdmissionConfigFile string
}

// ControlPlane is a running etcd and kube-apiserver. Its methods must not
// be called concurrently.
type ControlPlane struct {
	opts      Options
	dataDir   string
	etcd      *process
	apiServer *process
	apiArgs   []string
	config    *rest.Config
	health    *http.Client
	healthURL string
}

// Start starts etcd, then kube-apiserver, and returns once kube-apiserver
// is ready. On an error it stops what it started.
func Start(opts Options) (*ControlPlane, error) {
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	cp := &ControlPlane{opts: opts}
	if err := cp.start(); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

func (cp *ControlPlane) start() error {
	var err error
	if cp.dataDir, err = os.MkdirTemp("", "opkit-etcd-"); err != nil {
		return fmt.Errorf("make etcd's data directory: %w", err)
	}
	etcdURL, err := cp.startEtcd()
	if err != nil {
		return err
	}
	port, err := freePort(host)
	if err != nil {
		return err
	}
	servingCA, cert, key, err := writeCerts(cp.opts.CertDir, host)
	if err != nil {
		return fmt.Errorf("make certificates: %w", err)
	}
	cp.config = &rest.Config{
		Host:            "https://" + hostPort(host, port),
		TLSClientConfig: rest.TLSClientConfig{CAData: servingCA, CertData: cert, KeyData: key},
		QPS:             -1, // the API server's priority and fairness limit
	}
	if cp.health, err = healthClient(servingCA, cert, key); err != nil {
		return err
	}
	cp.healthURL = cp.config.Host + "/readyz"
	cp.apiArgs = apiServerArgs(cp.opts.CertDir, etcdURL, port)
	if cp.opts.FeatureGates != "" {
		cp.apiArgs = append(cp.apiArgs, "--feature-gates="+cp.opts.FeatureGates)
	}
	if cp.opts.AdmissionConfigFile != "" {
		cp.apiArgs = append(cp.apiArgs, "--admission-control-config-file="+cp.opts.AdmissionConfigFile)
	}
	return cp.StartAPIServer()
}

func (cp *ControlPlane) startEtcd() (string, error) {
	clientPort, err := freePort(host)
	if err != nil {
		return "", err
	}
	peerPort, err := freePort(host)
	if err != nil {
		return "", err
	}
	url := "http://" + hostPort(host, clientPort)
	args := []string{
		"--data-dir=" + cp.dataDir,
		"--listen-client-urls=" + url,
		"--advertise-client-urls=" + url,
		"--listen-peer-urls=http://" + hostPort(host, peerPort),
		"--unsafe-no-fsync=true", // a test's data need not survive a power cut
	}
	if cp.etcd, err = startProcess("etcd", cp.opts.Etcd, args, cp.opts.Output); err != nil {
		return "", err
	}
	return url, cp.etcd.waitHealthy(http.DefaultClient, url+"/health", cp.opts.StartTimeout)
}

func apiServerArgs(certDir, etcdURL string, port int) []string {
	return []string{
		"--bind-address=" + host,
		fmt.Sprintf("--secure-port=%d", port),
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + certDir,
		"--client-ca-file=" + filepath.Join(certDir, clientCAFile),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer=" + fmt.Sprintf("https://%s/", hostPort(host, port)),
		"--service-account-key-file=" + filepath.Join(certDir, saPublicFile),
		"--service-account-signing-key-file=" + filepath.Join(certDir, saKeyFile),
		// Without it, a stopping kube-apiserver waits for its clients to
		// end their watches, which an operator never does: the stop times
		// out.
		"--shutdown-watch-termination-grace-period=2s",
	}
}

func healthClient(servingCA, cert, key []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(servingCA)
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("load the admin certificate: %w", err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, nil
}

// StartAPIServer starts kube-apiserver, with the arguments of the first
// start (same port, certificates and etcd), and waits until it is ready.
func (cp *ControlPlane) StartAPIServer() error {
	if cp.apiArgs == nil {
		return errNotStarted
	}
	p, err := startProcess("kube-apiserver", cp.opts.APIServer, cp.apiArgs, cp.opts.Output)
	if err != nil {
		return err
	}
	cp.apiServer = p
	return p.waitHealthy(cp.health, cp.healthURL, cp.opts.StartTimeout)
}

// StopAPIServer stops kube-apiserver only.
func (cp *ControlPlane) StopAPIServer() error {
	p := cp.apiServer
	cp.apiServer = nil
	return p.stop(cp.opts.StopTimeout)
}

// SuspendEtcd freezes etcd (SIGSTOP) until ResumeEtcd or Stop.
func (cp *ControlPlane) SuspendEtcd() error {
	if cp.etcd == nil {
		return errNotStarted
	}
	return cp.etcd.suspend()
}

// ResumeEtcd resumes etcd after SuspendEtcd.
func (cp *ControlPlane) ResumeEtcd() error {
	if cp.etcd == nil {
		return errNotStarted
	}
	return cp.etcd.resume()
}

// DataDir returns etcd's data directory, which Stop removes; "" once
// stopped.
func (cp *ControlPlane) DataDir() string { return cp.dataDir }

// Stop stops kube-apiserver, then etcd, and removes etcd's data.
func (cp *ControlPlane) Stop() error {
	err := errors.Join(cp.StopAPIServer(), cp.etcd.stop(cp.opts.StopTimeout))
	cp.etcd = nil
	if cp.dataDir != "" {
		err = errors.Join(err, os.RemoveAll(cp.dataDir))
		cp.dataDir = ""
	}
	return err
}

// Config returns the admin's REST config; the caller must not modify it.
func (cp *ControlPlane) Config() *rest.Config { return cp.config }
