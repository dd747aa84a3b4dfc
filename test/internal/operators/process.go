package operators

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/internal/freeport"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// Build builds the command pkg of the module in dir into bin, without
// the local control plane (-tags nolocal), as it is deployed.
func Build(t testing.TB, bin, dir, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", "nolocal", "-o", bin, pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, out)
	}
}

// Implementation is an operator binary a test runs.
type Implementation struct {
	Name   string
	Module string   // the directory of the module that holds Pkg
	Pkg    string   // its command's package
	Dir    string   // where to build it
	Args   []string // flags the common ones leave out
	bin    string   // once built
}

// Binary builds the implementation the first time it is asked for, and
// returns the binary's path.
func (impl *Implementation) Binary(t testing.TB) string {
	t.Helper()
	if impl.bin == "" {
		bin := filepath.Join(impl.Dir, impl.Name)
		Build(t, bin, impl.Module, impl.Pkg)
		impl.bin = bin
	}
	return impl.bin
}

// FreePort returns a port nothing listens on now, which no listener on
// port 0 will be given (internal/freeport).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Process is one operator process. Err and ExitedAt are set before
// Exited is closed.
type Process struct {
	Name     string
	Cmd      *exec.Cmd
	Log      string // its standard output and error: JSON log lines
	Metrics  string // its /metrics URL
	Exited   chan struct{}
	Err      error     // Wait's, once Exited is closed
	ExitedAt time.Time // once Exited is closed
}

// Start runs the operator bin with args, its metrics on a port of its own
// and its probes on any, until it exits or the test ends.
func Start(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	port := FreePort(t)
	p := &Process{Name: name, Log: filepath.Join(t.TempDir(), name+".log"), Metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), Exited: make(chan struct{})}
	args = append(args, "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--health-probe-bind-address", "127.0.0.1:0")
	p.Cmd = exec.Command(bin, args...)
	f, err := os.Create(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	p.Cmd.Stdout, p.Cmd.Stderr = f, f
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.Err = p.Cmd.Wait()
		p.ExitedAt = time.Now()
		f.Close()
		close(p.Exited)
	}()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Signal(syscall.SIGCONT)
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	})
	return p
}

// Signal sends sig to the process and returns when it was sent.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.Name, err)
	}
	return at
}

// Freeze stops the process with SIGSTOP and returns when it was seen
// stopped (state T in /proc): it may run on for a moment after the signal
// is sent, and what it records then is from before the freeze. Use the
// time returned, not the time the signal was sent, as the moment it
// stopped. The freeze's takeover times are best measured from the
// signal: Freeze also returns when it was sent.
func (p *Process) Freeze(t testing.TB) (sent, stopped time.Time) {
	t.Helper()
	sent = p.Signal(t, syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid)
	deadline := time.Now().Add(time.Minute)
	for {
		data, err := os.ReadFile(stat)
		if err != nil {
			t.Fatalf("read the state of %s: %v", p.Name, err)
		}
		// The state follows the command's name, which is in parentheses
		// and may hold spaces or parentheses itself.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && i+2 < len(data) && data[i+2] == 'T' {
			return sent, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not stopped within a minute of SIGSTOP: %s", p.Name, data)
		}
		time.Sleep(time.Millisecond)
	}
}

// Wait waits for the process to exit, at most limit, and returns how it
// exited.
func (p *Process) Wait(t testing.TB, limit time.Duration) error {
	t.Helper()
	select {
	case <-p.Exited:
		return p.Err
	case <-time.After(limit):
		t.Fatalf("%s did not exit within %v", p.Name, limit)
		return nil
	}
}

// HasExited reports whether the process has exited. It is safe for
// concurrent use.
func (p *Process) HasExited() bool {
	select {
	case <-p.Exited:
		return true
	default:
		return false
	}
}

// Scrape returns the lines of the process's /metrics.
func (p *Process) Scrape() ([]string, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(p.Metrics)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// Sum scrapes the process's /metrics and sums the samples of the series
// called name (with any labels).
func (p *Process) Sum(name string) (float64, error) {
	lines, err := p.Scrape()
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, line := range lines {
		// The value is the last field: label values may hold spaces.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || (!strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{")) {
			continue
		}
		val := line[i+1:]
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, fmt.Errorf("%s's /metrics line %q: %w", p.Name, line, err)
		}
		sum += v
	}
	return sum, nil
}

// LogHas reports whether the process logged a line containing msg.
func (p *Process) LogHas(msg string) bool {
	b, err := os.ReadFile(p.Log)
	return err == nil && strings.Contains(string(b), msg)
}

// Leads reports whether the process holds the Lease named lease, by its
// leader_election_master_status gauge (client-go's through
// controller-runtime; opkit's is 1 only while its fence is open), which a
// standby serves at 0.
func (p *Process) Leads(lease string) (bool, error) {
	lines, err := p.Scrape()
	if err != nil {
		return false, err
	}
	series := fmt.Sprintf("%s{name=%q} ", imetrics.Leader, lease)
	for _, line := range lines {
		if v, ok := strings.CutPrefix(line, series); ok {
			return v == "1", nil
		}
	}
	return false, fmt.Errorf("%s serves no %s", p.Name, strings.TrimSpace(series))
}

// Implementations returns the sample operator (cmd/sample-operator) and
// its controller-runtime twin (hack/bench/crmirror, in the benchmarks'
// module, which is not the SDK's), to be built into dir, for a test
// package two directories below the module's root.
func Implementations(dir string) (opkit, peer *Implementation) {
	opkit = &Implementation{Name: "opkit", Module: ".", Pkg: "github.com/opkit-dev/opkit/cmd/sample-operator", Dir: dir, Args: []string{"--webhook-port", "0"}}
	peer = &Implementation{Name: "controller-runtime", Module: "../../hack/bench", Pkg: "github.com/opkit-dev/opkit/hack/bench/crmirror", Dir: dir}
	return opkit, peer
}
