package deployed

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// operator is the sample-operator binary running as a process, with its
// probes and secure metrics on loopback ports.
type operator struct {
	cmd    *exec.Cmd
	logs   *logs
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// opConfig says how to run the operator.
type opConfig struct {
	kubeconfig string // "" leaves --kubeconfig out
	lease      string // --leader-election-id
	leaseNS    string // --leader-election-namespace; "" leaves it to the pod's
	env        []string
	// wrap, when set, returns the command line that runs argv instead
	// (say, in a private mount namespace).
	wrap func(argv []string) []string
	// anyExit accepts any way the process ends; by default it must exit 0
	// at SIGTERM.
	anyExit bool
	// noLeaderElection leaves --leader-elect out.
	noLeaderElection bool
	// exitOnLoss adds --leader-elect-exit-on-loss.
	exitOnLoss bool
	// podNamespace leaves --webhook-namespace out, for an operator that
	// reads its namespace as a pod does.
	podNamespace bool
	// args are more flags.
	args []string
}

// startOperator runs the operator as the Deployment in config/manager
// does (leader election, secure metrics), until the test ends.
func startOperator(t testing.TB, c opConfig) *operator {
	t.Helper()
	op := &operator{logs: &logs{}, exited: make(chan struct{})}
	// Port 0: the operator picks free ports and logs them ("Serving").
	argv := []string{operatorBin, "--metrics-bind-address", "127.0.0.1:0", "--metrics-secure", "--health-probe-bind-address", "127.0.0.1:0"}
	if !c.noLeaderElection {
		argv = append(argv, "--leader-elect", "--leader-election-id", c.lease)
		if c.exitOnLoss {
			argv = append(argv, "--leader-elect-exit-on-loss")
		}
	}
	if c.kubeconfig != "" {
		argv = append(argv, "--kubeconfig", c.kubeconfig)
	}
	if c.leaseNS != "" {
		argv = append(argv, "--leader-election-namespace", c.leaseNS)
	}
	// The webhook server with self-managed certificates, as config/default
	// runs it, on a free port (the API server cannot call it here: see
	// webhook_test.go) and a certificate directory of its own.
	installWebhookTargets(t)
	argv = append(argv, "--webhook-port", fmt.Sprint(freePort(t)), "--webhook-cert-dir", filepath.Join(t.TempDir(), "certs"), "--webhook-certs", "self-managed")
	if !c.podNamespace {
		argv = append(argv, "--webhook-namespace", webhookNamespace)
	}
	// config/policy, which config/default installs beside the operator,
	// and its binding, which config/manager names.
	render(t).createPolicies(t)
	argv = append(argv, "--identity-policy", identityBinding)
	argv = append(argv, c.args...)
	if c.wrap != nil {
		argv = c.wrap(argv)
	}
	op.cmd = exec.Command(argv[0], argv[1:]...)
	// Nothing of the test's environment: no KUBECONFIG, no HOME's config.
	op.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, c.env...)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := op.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	op.cmd.Stdout = logFile
	if err := op.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		op.logs.read(io.TeeReader(stderr, logFile))
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		op.err = op.cmd.Wait()
		logFile.Close()
		close(op.exited)
	}()
	t.Cleanup(func() {
		if err := op.stop(); err != nil && !c.anyExit {
			t.Errorf("operator: %v", err)
		}
		if t.Failed() {
			t.Logf("operator's log:\n%s", op.logs)
		}
	})
	return op
}

// stop sends SIGTERM, as the kubelet does, and returns how the process
// ended.
func (op *operator) stop() error {
	select {
	case <-op.exited:
		return op.err
	default:
	}
	_ = op.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-op.exited:
		return op.err
	case <-time.After(60 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.exited
		return fmt.Errorf("did not stop within 60s of SIGTERM")
	}
}

// running reports whether the process has not exited yet.
func (op *operator) running() bool {
	select {
	case <-op.exited:
		return false
	default:
		return true
	}
}

// addr returns where the operator serves server ("metrics", "health
// probes"), from its "Serving" log line, or an error until it has logged it.
func (op *operator) addr(server string) (string, error) {
	op.logs.mu.Lock()
	defer op.logs.mu.Unlock()
	for _, line := range op.logs.raw {
		var l struct{ Msg, Server, Address string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Serving" && l.Server == server {
			return l.Address, nil
		}
	}
	return "", fmt.Errorf("the operator has not logged where it serves %s yet", server)
}

// ready reports the answer of /readyz?verbose.
func (op *operator) ready() (int, string, error) {
	addr, err := op.addr("health probes")
	if err != nil {
		return 0, "", err
	}
	resp, err := http.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrape reads the operator's secure /metrics with token.
func (op *operator) scrape(token string) (string, error) {
	addr, err := op.addr("metrics")
	if err != nil {
		return "", err
	}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// The operator serves a self-signed certificate, as it does in a pod
	// without Options.Metrics.CertDir; the test trusts loopback.
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	resp, err := cl.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	return string(body), nil
}

// sample sums the samples of metric whose labels include every one of
// labels (each written name="value"), in the text exposition format.
func sample(text, metric string, labels ...string) (float64, error) {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != metric || slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(rest, l) }) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("parse %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}

// logs holds the operator's JSON log lines.
type logs struct {
	mu    sync.Mutex
	raw   []string
	texts []string // every string value of each line, unescaped
}

func (l *logs) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var fields map[string]any
		text := line
		if json.Unmarshal([]byte(line), &fields) == nil {
			var b strings.Builder
			for _, v := range fields {
				fmt.Fprintf(&b, "%v\n", v)
			}
			text = b.String()
		}
		l.mu.Lock()
		l.raw, l.texts = append(l.raw, line), append(l.texts, text)
		l.mu.Unlock()
	}
}

// find returns the first line whose text holds every one of parts.
func (l *logs) find(parts ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, text := range l.texts {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(text, p) }) {
			return l.raw[i], true
		}
	}
	return "", false
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.raw, "\n")
}
