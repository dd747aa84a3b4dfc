// Package sharding runs the Mirror sample operator sharded, as real
// processes against a real control plane, while replicas join, leave,
// crash and freeze: no Mirror is ever reconciled by two replicas at once,
// every Mirror converges, and slots move within the bounds.
// docs/sharding.md says what each step shows. It also freezes the leader
// of two replicas run with leader election, on opkit and on
// controller-runtime, and checks that the old leader acts no more once
// the new one has begun (freeze_test.go).
package sharding

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/internal/sharding/dispatch"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// controller-runtime's client logs through its global logger, and
	// complains with a stack trace if none is set.
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, testenv.Options{CRDDirs: []string{"../../config/crd/bases"}}, func(e *testenv.Environment) { env = e })
}

// Lease timings of the churn test: the 4 s / 3 s / 0.5 s, short
// enough for the test, long enough for a replica on a busy two-core
// machine to keep renewing.
const (
	slots         = 16
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// buildOperator builds cmd/sample-operator into a temporary directory
// (test/faults does the same).
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sample-operator")
	goBuild(t, bin, ".", "github.com/opkit-dev/opkit/cmd/sample-operator")
	return bin
}

// goBuild builds the command pkg of the module in dir into bin, without
// the local control plane (-tags nolocal), as it is deployed.
func goBuild(t *testing.T, bin, dir, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-tags", "nolocal", "-o", bin, pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, out)
	}
}

// replica is one operator process.
type replica struct {
	name     string
	cmd      *exec.Cmd
	log      string // its standard error: JSON log lines
	metrics  string // its /metrics URL
	exited   chan struct{}
	err      error     // Wait's, once exited is closed
	exitedAt time.Time // once exited is closed
}

// group is what every replica of the test shares: the binary, the
// kubeconfig, the shard group's name and Lease namespace, and the file
// its reconciles are recorded in.
type group struct {
	bin, kubeconfig, name, namespace, records string
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a sharded replica named name, with its reconciles recorded
// in g.records.
func (g group) start(t *testing.T, name string) *replica {
	t.Helper()
	return startProcess(t, name, g.bin, "--kubeconfig", g.kubeconfig, "-v", "1", "--max-concurrent-reconciles", "4",
		"--webhook-port", "0", "--record-reconciles", g.records,
		"--shard-group", g.name, "--shard-namespace", g.namespace, "--shard-identity", name,
		"--shard-slots", strconv.Itoa(slots), "--shard-lease-duration", leaseDuration.String(),
		"--shard-renew-deadline", renewDeadline.String(), "--shard-retry-period", retryPeriod.String())
}

// startProcess runs the operator bin with args, its metrics on a port of
// its own and its probes on any, until it exits or the test ends.
func startProcess(t *testing.T, name, bin string, args ...string) *replica {
	t.Helper()
	port := freePort(t)
	r := &replica{name: name, log: filepath.Join(t.TempDir(), name+".log"), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), exited: make(chan struct{})}
	args = append(args, "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--health-probe-bind-address", "127.0.0.1:0")
	r.cmd = exec.Command(bin, args...)
	f, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		r.exitedAt = time.Now()
		f.Close()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = r.cmd.Process.Kill()
		<-r.exited
	})
	return r
}

func (r *replica) signal(t *testing.T, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, r.name, err)
	}
	return at
}

// wait waits for the replica to exit, at most limit.
func (r *replica) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case <-r.exited:
		return r.err
	case <-time.After(limit):
		t.Fatalf("%s did not exit within %v", r.name, limit)
		return nil
	}
}

// shardStats is what a replica's /metrics says of its membership.
type shardStats struct {
	held, members int
	handovers     int
	lastTakeover  float64
}

// scrape returns the lines of the replica's /metrics.
func (r *replica) scrape() ([]string, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(r.metrics)
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

// stats scrapes the replica's dispatch.MetricSlotsHeld and MetricMembers,
// and MetricHandovers and MetricLastTakeover where it exports them.
func (r *replica) stats() (shardStats, error) {
	lines, err := r.scrape()
	if err != nil {
		return shardStats{}, err
	}
	var s shardStats
	found := 0
	for _, line := range lines {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil:
		case name == dispatch.MetricSlotsHeld:
			s.held, found = int(v), found+1
		case name == dispatch.MetricMembers:
			s.members, found = int(v), found+1
		case name == dispatch.MetricHandovers:
			s.handovers = int(v)
		case name == dispatch.MetricLastTakeover:
			s.lastTakeover = v
		}
	}
	if found != 2 {
		return s, errors.New("no " + dispatch.MetricSlotsHeld + " or " + dispatch.MetricMembers + " yet")
	}
	return s, nil
}

// logHas reports whether the replica logged a line containing msg.
func (r *replica) logHas(msg string) bool {
	b, err := os.ReadFile(r.log)
	return err == nil && strings.Contains(string(b), msg)
}

// eventually polls cond every 20ms until it holds, for at most timeout,
// and returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
