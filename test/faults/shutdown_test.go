package faults

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// buildOperator builds cmd/sample-operator into a temporary directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sample-operator")
	start := time.Now()
	out, err := exec.Command("go", "build", "-o", bin, "github.com/opkit-dev/opkit/cmd/sample-operator").CombinedOutput()
	if err != nil {
		t.Fatalf("go build sample-operator: %v\n%s", err, out)
	}
	t.Logf("built the sample operator in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// process is the sample operator running as a process.
type process struct {
	cmd        *exec.Cmd
	reconciled atomic.Int64 // "Reconciled" log lines seen
	exited     chan struct{}
	err        error // Wait's, once exited is closed
}

func startProcess(t *testing.T, bin, kubeconfig, log string) *process {
	t.Helper()
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "-v", "1", "--max-concurrent-reconciles", "4",
		"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
		// No webhook configurations point at it here, and outside a pod
		// self-managed certificates would need --webhook-namespace.
		"--webhook-port", "0")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = f
	p := &process{cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(io.TeeReader(stderr, f))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"msg":"Reconciled"`) {
				p.reconciled.Add(1)
			}
		}
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// hasExited reports whether the process has exited; p.err is then set.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// term sends SIGTERM and waits for the exit, at most limit.
func (p *process) term(t *testing.T, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		return time.Since(start), p.err
	case <-time.After(limit):
		return time.Since(start), errors.New("did not exit")
	}
}

// SIGTERM while the operator works through a backlog: it exits 0 within
// its shutdown timeout, and a restarted operator finishes the work.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	bin := buildOperator(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	nss := w.namespaces(20)
	const mirrors = 40
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": name})
		w.mirror(name, name, w.selector())
	}

	logs := t.TempDir()
	p := startProcess(t, bin, kubeconfig, filepath.Join(logs, "first.log"))
	eventually(t, 60*time.Second, "the first reconciles", func() error {
		if p.hasExited() {
			t.Fatalf("the operator exited before reconciling: %v; its log is %s", p.err, filepath.Join(logs, "first.log"))
		}
		if n := p.reconciled.Load(); n < 3 {
			return fmt.Errorf("%d reconciled", n)
		}
		return nil
	})
	before := p.reconciled.Load()
	took, err := p.term(t, manager.DefaultShutdownTimeout+10*time.Second)
	after := p.reconciled.Load()
	t.Logf("SIGTERM after %d of %d Mirrors reconciled; %d more finished during the shutdown; exit %v after %v",
		before, mirrors, after-before, err, took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the operator exited with %v after SIGTERM, want 0 (its log: %s)", err, filepath.Join(logs, "first.log"))
	}
	if took > manager.DefaultShutdownTimeout {
		t.Errorf("the operator took %v to stop, more than its shutdown timeout %v", took, manager.DefaultShutdownTimeout)
	}
	first, err := os.ReadFile(filepath.Join(logs, "first.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), `"msg":"Stopped"`) || strings.Contains(string(first), "panic") {
		t.Errorf("the operator's log does not end with a clean stop:\n%s", first[max(0, len(first)-2000):])
	}
	if after >= mirrors {
		t.Logf("note: every Mirror was reconciled before the shutdown finished; the SIGTERM found less in flight than intended")
	}

	p2 := startProcess(t, bin, kubeconfig, filepath.Join(logs, "second.log"))
	restarted := time.Now()
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the restart", w.copiesEqual(nss, name, map[string]string{"v": name}))
	}
	t.Logf("the restarted operator converged %d copies in %v", mirrors*len(nss), time.Since(restarted).Round(time.Millisecond))
	if took, err := p2.term(t, manager.DefaultShutdownTimeout+10*time.Second); err != nil {
		t.Errorf("the restarted operator exited with %v after %v", err, took)
	}
}
