package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
	"github.com/opkit-dev/opkit/internal/freeport"
)

// replica is one operator process.
type replica struct {
	cmd                     *exec.Cmd
	identity                string // in its shard group
	metricsAddr, healthAddr string
	log                     *os.File
	killed                  bool
}

// startReplica starts the operator binary as member identity of group,
// its output in logPath.
func startReplica(o options, bin, kubeconfig, group, identity, dependency, logPath string) (*replica, error) {
	m, err := freeAddr()
	if err != nil {
		return nil, err
	}
	h, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--metrics-bind-address", m, "--health-probe-bind-address", h,
		"--dependency", dependency, "--group", group, "--identity", identity, "--lease-namespace", leaseNamespace,
		"--max-concurrent-reconciles", strconv.Itoa(o.workers),
		"--lease-duration", o.lease.String(), "--renew-deadline", o.renew.String(), "--retry-period", o.retry.String(),
		"--balance-half-life", o.balance.String(), "--shard-by-namespace="+strconv.FormatBool(o.skewed),
		"--client-side-filter="+strconv.FormatBool(o.clientFilter), "--pprof", "--mem-profile-rate="+strconv.Itoa(memProfileRate(o)),
		"-v="+strconv.Itoa(o.verbosity))
	if o.trace {
		cmd.Args = append(cmd.Args, "--trace", tracePath(logPath))
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &replica{cmd: cmd, identity: identity, metricsAddr: m, healthAddr: h, log: log}, nil
}

// freeAddr returns a loopback address for a replica's server to bind:
// its port below the kernel's ephemeral range (internal/freeport), so that
// no outgoing connection takes it before the replica binds it.
func freeAddr() (string, error) {
	p, err := freeport.Port()
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// get returns the body of an HTTP GET of url, and whether it answered 200.
func get(ctx context.Context, url string) ([]byte, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode == http.StatusOK, err
}

// scrape returns the replica's /metrics.
func (r *replica) scrape(ctx context.Context) ([]byte, error) {
	body, ok, err := get(ctx, "http://"+r.metricsAddr+"/metrics")
	if err == nil && !ok {
		err = errors.New("not 200 OK")
	}
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", r.metricsAddr, err)
	}
	return body, nil
}

// gauge returns the replica's unlabelled metric name now.
func (r *replica) gauge(ctx context.Context, name string) (float64, error) {
	body, err := r.scrape(ctx)
	if err != nil {
		return 0, err
	}
	return promtext.Gauge(bytes.NewReader(body), name)
}

// memProfileRate is the replicas' runtime.MemProfileRate: with -profile,
// a sample every 4 KiB allocated, so that a heap profile tells apart the
// few MiB a replica's share of the cache is made of; otherwise Go's
// default.
func memProfileRate(o options) int {
	if o.profile == "" {
		return 0
	}
	return 4096
}

// Metrics the benchmark reads from every replica.
const (
	heapMetric = "go_memstats_heap_inuse_bytes"
	liveMetric = "go_memstats_heap_alloc_bytes" // read right after a collection
	// reconcileMetric (imetrics.ReconcileTime) of controllerName, and
	// requestMetric (imetrics.RESTClientRequestDuration), time the
	// reconciles and writes.
	reconcileMetric = "controller_runtime_reconcile_time_seconds"
	requestMetric   = "rest_client_request_duration_seconds"
	membersMetric   = "opkit_sharding_members"    // imetrics.ShardingMembers
	heldMetric      = "opkit_sharding_slots_held" // imetrics.ShardingSlotsHeld
)

// waitSettled waits until every replica's /readyz passes, each sees all
// len(rs) members, and together they hold every slot once: the group's
// membership has settled and the timed phase measures reconciles, not a
// handover.
func waitSettled(ctx context.Context, rs []*replica, slots int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = settled(ctx, rs, slots); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replicas not settled within %v: %w", timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func settled(ctx context.Context, rs []*replica, slots int) error {
	held := 0
	for _, r := range rs {
		if _, ok, err := get(ctx, "http://"+r.healthAddr+"/readyz"); err != nil || !ok {
			return fmt.Errorf("replica %s not ready: %v", r.healthAddr, err)
		}
		body, err := r.scrape(ctx)
		if err != nil {
			return err
		}
		m, err := promtext.Gauge(bytes.NewReader(body), membersMetric)
		if err != nil {
			return err
		}
		if int(m) != len(rs) {
			return fmt.Errorf("replica %s sees %v members of %d", r.healthAddr, m, len(rs))
		}
		h, err := promtext.Gauge(bytes.NewReader(body), heldMetric)
		if err != nil {
			return err
		}
		held += int(h)
	}
	if held != slots {
		return fmt.Errorf("the replicas hold %d slots of %d", held, slots)
	}
	return nil
}

// waitHeld waits until rs hold every slot between them, polling each
// one's heldMetric, and returns when they first did.
func waitHeld(ctx context.Context, rs []*replica, slots int, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		held, err := 0, error(nil)
		for _, r := range rs {
			var h float64
			if h, err = r.gauge(ctx, heldMetric); err != nil {
				break
			}
			held += int(h)
		}
		if err == nil && held == slots {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the survivors do not hold all %d slots within %v (last: %d held, %v)", slots, timeout, held, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL, as a crash would, and reaps the process.
func (r *replica) kill() error {
	r.killed = true
	if err := r.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill replica: %w", err)
	}
	_ = r.cmd.Wait() // "signal: killed"
	return nil
}

// stop stops the replica with SIGTERM (SIGKILL after 30s), unless it was
// killed.
func (r *replica) stop() error {
	defer r.log.Close()
	if r.killed {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("replica %s (log %s): %w", r.metricsAddr, r.log.Name(), err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		return errors.Join(fmt.Errorf("replica %s (log %s) did not stop within 30s of SIGTERM", r.metricsAddr, r.log.Name()), <-done)
	}
}
