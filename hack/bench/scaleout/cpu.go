package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

// cpuMetric is every Go process's CPU seconds on its /metrics.
const cpuMetric = "process_cpu_seconds_total"

// machineTicks returns the machine's busy and total CPU time, in clock
// ticks summed over every core, from /proc/stat: busy is all but idle and
// iowait.
func machineTicks() (busy, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, errors.Join(errors.New("/proc/stat is empty"), sc.Err())
	}
	return parseCPULine(sc.Text())
}

// parseCPULine parses the "cpu" line of /proc/stat.
func parseCPULine(line string) (busy, total uint64, err error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: want a first line of cpu times, got %q", line)
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		if i >= 7 { // guest and guest_nice are counted in user already
			break
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

// cpuSample is the CPU time used so far by the machine, the API server and
// each replica.
type cpuSample struct {
	busy, total uint64
	apiServer   float64
	replicas    []float64
}

func sampleCPU(ctx context.Context, cs kubernetes.Interface, rs []*replica) (cpuSample, error) {
	var s cpuSample
	var err error
	if s.busy, s.total, err = machineTicks(); err != nil {
		return s, err
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("read the API server's /metrics: %w", err)
	}
	if s.apiServer, err = promtext.Gauge(bytes.NewReader(body), cpuMetric); err != nil {
		return s, fmt.Errorf("the API server's /metrics: %w", err)
	}
	for _, r := range rs {
		v, err := r.gauge(ctx, cpuMetric)
		if err != nil {
			return s, err
		}
		s.replicas = append(s.replicas, v)
	}
	return s, nil
}

// cpuUse is the CPU spent between two samples.
type cpuUse struct {
	// MachineBusy is the fraction of every core's time that was busy.
	MachineBusy float64
	// APIServerSeconds and ReplicaSeconds are CPU seconds, ReplicaSeconds
	// summed over the replicas.
	APIServerSeconds, ReplicaSeconds float64
}

func (a cpuSample) until(b cpuSample) cpuUse {
	u := cpuUse{APIServerSeconds: b.apiServer - a.apiServer}
	if b.total > a.total {
		u.MachineBusy = float64(b.busy-a.busy) / float64(b.total-a.total)
	}
	for i := range min(len(a.replicas), len(b.replicas)) {
		u.ReplicaSeconds += b.replicas[i] - a.replicas[i]
	}
	return u
}

// profile takes, with -profile, CPU profiles of the API server and of
// every replica over the next o.profileFor, into files named after run;
// the channel receives their error once all are written (at once, nil,
// without -profile).
func (d *driver) profile(ctx context.Context, run string, rs []*replica) <-chan error {
	out := make(chan error, 1)
	if d.o.profile == "" {
		out <- nil
		return out
	}
	secs := strconv.Itoa(max(1, int(d.o.profileFor.Seconds())))
	go func() {
		if err := os.MkdirAll(d.o.profile, 0o755); err != nil {
			out <- err
			return
		}
		errs := make(chan error, len(rs)+1)
		go func() {
			body, err := d.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).DoRaw(ctx)
			if err == nil {
				err = os.WriteFile(filepath.Join(d.o.profile, run+"-apiserver.pprof"), body, 0o644)
			}
			errs <- err
		}()
		for i, r := range rs {
			go func() {
				body, ok, err := get(ctx, "http://"+r.metricsAddr+"/debug/pprof/profile?seconds="+secs)
				if err == nil && !ok {
					err = fmt.Errorf("replica %s: no CPU profile", r.metricsAddr)
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(d.o.profile, fmt.Sprintf("%s-replica-%d.pprof", run, i)), body, 0o644)
				}
				errs <- err
			}()
		}
		var err error
		for range len(rs) + 1 {
			err = errors.Join(err, <-errs)
		}
		out <- err
	}()
	return out
}

// heapProfiles writes, with -profile, every replica's heap profile (after
// a collection) and its goroutines into files named after run.
func (d *driver) heapProfiles(ctx context.Context, run string, rs []*replica) error {
	if d.o.profile == "" {
		return nil
	}
	if err := os.MkdirAll(d.o.profile, 0o755); err != nil {
		return err
	}
	for i, r := range rs {
		body, ok, err := get(ctx, "http://"+r.metricsAddr+"/debug/pprof/heap?gc=1")
		if err == nil && !ok {
			err = fmt.Errorf("replica %s: no heap profile", r.metricsAddr)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(d.o.profile, fmt.Sprintf("%s-replica-%d.heap", run, i)), body, 0o644)
		}
		if err != nil {
			return err
		}
		// Its goroutines, for what runs that should not (an informer
		// left behind, say).
		if body, ok, err = get(ctx, "http://"+r.metricsAddr+"/debug/pprof/goroutine?debug=1"); err == nil && ok {
			err = os.WriteFile(filepath.Join(d.o.profile, fmt.Sprintf("%s-replica-%d.goroutines", run, i)), body, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
