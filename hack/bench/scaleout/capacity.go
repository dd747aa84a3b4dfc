package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

// The objective capacity is measured under, as timebertt's
// kubernetes-controller-sharding measures it: every replica's p99 of the
// time keys wait in its queue, and of its reconciles, within these.
const (
	objectiveQueue     = time.Second
	objectiveReconcile = 5 * time.Second
)

// published is timebertt/kubernetes-controller-sharding's published
// capacity of n instances over one's, for the table beside opkit's.
var published = map[int]float64{1: 1, 2: 1.48, 3: 2.14, 4: 2.56, 5: 2.98}

// probe is one churn rate tried.
type probe struct {
	// Rate is the changes per second asked for; Achieved what the driver
	// wrote.
	Rate, Achieved float64
	// QueueP99 and ReconcileP99 are the worst replica's, in seconds,
	// over the window.
	QueueP99, ReconcileP99 float64
	// BusiestShare is the busiest replica's share of the window's
	// dependency calls.
	BusiestShare float64
	// CPU is what the machine, the API server and the replicas spent
	// over the window: whether the two cores bound the probe.
	CPU cpuUse
	// Moved is how many slots' holders differ between the start of the
	// ramp and the end of the window (balancing moves them while the
	// loads change): keys of a moving slot wait for its new holder.
	Moved int
	Met   bool
}

// capacityResult is one replica count's capacity: the largest churn rate
// whose probe met the objective.
type capacityResult struct {
	Replicas int
	Rate     float64
	At       probe
	Probes   []probe
}

// capacity finds, for n replicas, the largest rate of changes (spread
// round-robin over o.objects objects) that meets the objective, by
// bisection between 0 and 1.1× what the workers and the dependency allow
// (n × workers / delay), over o.probes probes.
func (d *driver) capacity(ctx context.Context, n int) (res capacityResult, err error) {
	o := d.o
	res.Replicas = n
	run := fmt.Sprintf("c%d", n)
	st, err := d.stage(ctx, run, n)
	defer func() { err = errors.Join(err, st.close(ctx)) }()
	if err != nil {
		return res, err
	}
	prog, rs, group := st.prog, st.rs, st.group
	var warm roundResult
	if err := d.warm(ctx, run, group, prog, rs, &warm); err != nil {
		return res, err
	}
	c := &churn{d: d, run: run, group: group, seq: int64(o.warmup) + 1}
	ideal := float64(n*o.workers) / o.delay.Seconds()
	lo, hi := 0.0, 1.1*ideal
	for range o.probes {
		rate := (lo + hi) / 2
		p, err := c.probe(ctx, rs, rate)
		if err != nil {
			return res, err
		}
		logf("capacity, %d replicas: %.1f changes/s asked, %.1f written: queue p99 %.3fs, reconcile p99 %.3fs, busiest %.3f, %d slots moved, machine %.0f%% busy, API server %.2f cores: %s",
			n, p.Rate, p.Achieved, p.QueueP99, p.ReconcileP99, p.BusiestShare, p.Moved, 100*p.CPU.MachineBusy, p.CPU.APIServerSeconds/o.window.Seconds(), map[bool]string{true: "met", false: "missed"}[p.Met])
		res.Probes = append(res.Probes, p)
		if p.Met {
			lo, res.Rate, res.At = rate, rate, p
		} else {
			hi = rate
		}
	}
	return res, nil
}

// churn writes changes at a rate, round-robin over the objects of run,
// each a new generation.
type churn struct {
	d          *driver
	run, group string
	seq        int64 // the next generation written
}

// probe churns at rate for a ramp of o.window/3 and a window of o.window,
// reads every replica's queue and reconcile histograms over the window,
// then waits for the replicas' queues to drain.
func (c *churn) probe(ctx context.Context, rs []*replica, rate float64) (probe, error) {
	o := c.d.o
	p := probe{Rate: rate}
	held, err := claims(ctx, c.d.cs, c.group)
	if err != nil {
		return p, err
	}
	ctx, stop := context.WithCancel(ctx)
	var written atomic.Int64
	var writeErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	var k atomic.Int64
	for range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := k.Add(1) - 1
				due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(due)):
				}
				obj := int(i % int64(o.objects))
				gen := atomic.AddInt64(&c.seq, 1)
				ns := c.d.layout.of(obj)
				name := configMap(c.run, ns, obj, 0, false, "").Name
				patch := []byte(fmt.Sprintf(`{"data":{%q:%q}}`, genKey, strconv.FormatInt(gen, 10)))
				if _, err := c.d.cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { writeErr = fmt.Errorf("churn configmap %s/%s: %w", ns, name, err) })
					}
					return
				}
				written.Add(1)
			}
		})
	}
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	err = wait(o.window / 3)
	var before, after []histograms
	var calls0 []int64
	var cpu0, cpu1 cpuSample
	if err == nil {
		before, err = readHistograms(ctx, rs)
		calls0 = c.calls(rs)
	}
	if err == nil {
		cpu0, err = sampleCPU(ctx, c.d.cs, rs)
	}
	w0, t0 := written.Load(), time.Now()
	if err == nil {
		err = wait(o.window)
	}
	if err == nil {
		cpu1, err = sampleCPU(ctx, c.d.cs, rs)
	}
	if err == nil {
		after, err = readHistograms(ctx, rs)
	}
	var now map[int]string
	if err == nil {
		now, err = claims(ctx, c.d.cs, c.group)
	}
	for s, who := range now {
		if held[s] != who {
			p.Moved++
		}
	}
	p.Achieved = float64(written.Load()-w0) / time.Since(t0).Seconds()
	p.CPU = cpu0.until(cpu1)
	calls1 := c.calls(rs)
	stop()
	wg.Wait()
	if err = errors.Join(err, writeErr); err != nil {
		return p, err
	}
	var total int64
	for i := range rs {
		total += calls1[i] - calls0[i]
	}
	for i := range rs {
		p.QueueP99 = max(p.QueueP99, p99(after[i].queue.Since(before[i].queue)))
		p.ReconcileP99 = max(p.ReconcileP99, p99(after[i].reconcile.Since(before[i].reconcile)))
		if total > 0 {
			p.BusiestShare = max(p.BusiestShare, float64(calls1[i]-calls0[i])/float64(total))
		}
	}
	p.Met = p.QueueP99 <= objectiveQueue.Seconds() && p.ReconcileP99 <= objectiveReconcile.Seconds() && p.Achieved >= 0.95*rate
	return p, drain(context.WithoutCancel(ctx), rs, 2*time.Minute)
}

func (c *churn) calls(rs []*replica) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = c.d.dep.callsOf(r.cmd.Process.Pid)
	}
	return out
}

// p99 returns h's 99th percentile; beyond the last finite bucket, that
// bucket's bound (far above the objective); 0 without observations.
func p99(h promtext.Histogram) float64 {
	q := h.Quantile(0.99)
	switch {
	case math.IsNaN(q):
		return 0
	case math.IsInf(q, 1) && len(h.Bounds) > 1:
		return h.Bounds[len(h.Bounds)-2]
	}
	return q
}

// histograms is one replica's queue wait and reconcile time.
type histograms struct{ queue, reconcile promtext.Histogram }

func readHistograms(ctx context.Context, rs []*replica) ([]histograms, error) {
	var out []histograms
	for _, r := range rs {
		body, err := r.scrape(ctx)
		if err != nil {
			return nil, err
		}
		var h histograms
		if h.queue, err = promtext.ReadHistogram(bytes.NewReader(body), "workqueue_queue_duration_seconds", map[string]string{"name": controllerName}); err != nil {
			return nil, err
		}
		if h.reconcile, err = promtext.ReadHistogram(bytes.NewReader(body), reconcileMetric, map[string]string{"controller": controllerName}); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// controllerName is the operator's controller (operator/main.go).
const controllerName = "scaleout"

// drain waits until no replica has a key queued or a reconcile running,
// so that one probe's backlog does not count in the next.
func drain(ctx context.Context, rs []*replica, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		busy := 0.0
		for _, r := range rs {
			body, err := r.scrape(ctx)
			if err != nil {
				return err
			}
			depth, err := promtext.Value(bytes.NewReader(body), "workqueue_depth", map[string]string{"name": controllerName})
			if err != nil {
				return err
			}
			active, err := promtext.Value(bytes.NewReader(body), "controller_runtime_active_workers", map[string]string{"controller": controllerName})
			if err != nil {
				return err
			}
			busy += depth + active
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replicas' queues did not drain within %v (%v keys queued or in flight)", timeout, busy)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// capacityTable tabulates the capacities beside the published curve, each
// with what bounds it: the lowest rate tried above it that missed (the
// bisection's resolution), the ratio the busiest replica's share allows
// (1/share), and how busy the machine and the API server were.
func capacityTable(o options, res []capacityResult) table {
	t := table{
		title: fmt.Sprintf("capacity under the objective (p99 queue ≤ %v and reconcile ≤ %v on every replica): %d objects, %d workers per replica, a %v dependency call per reconcile, %d probes of %v each by bisection",
			objectiveQueue, objectiveReconcile, o.objects, o.workers, o.delay, o.probes, o.window),
		header: []string{"replicas", "changes/s", "first missed", "over 1 replica", "published (timebertt)", "queue p99 (s)", "reconcile p99 (s)",
			"busiest share", "share allows", "machine busy", "API server cores"},
	}
	base := 0.0
	for _, r := range res {
		if r.Replicas == 1 {
			base = r.Rate
		}
	}
	for _, r := range res {
		over, pub, missed, allows := "—", "—", "—", "—"
		if base > 0 {
			over = fmt.Sprintf("%.2f×", r.Rate/base)
		}
		if v, ok := published[r.Replicas]; ok {
			pub = fmt.Sprintf("%.2f×", v)
		}
		if m := r.firstMissed(); m > 0 {
			missed = fmt.Sprintf("%.1f", m)
		}
		if r.At.BusiestShare > 0 {
			allows = fmt.Sprintf("%.2f×", 1/r.At.BusiestShare)
		}
		t.rows = append(t.rows, []string{strconv.Itoa(r.Replicas), fmt.Sprintf("%.1f", r.Rate), missed, over, pub,
			fmt.Sprintf("%.3f", r.At.QueueP99), fmt.Sprintf("%.3f", r.At.ReconcileP99), fmt.Sprintf("%.3f", r.At.BusiestShare), allows,
			fmt.Sprintf("%.0f%%", 100*r.At.CPU.MachineBusy), fmt.Sprintf("%.2f", r.At.CPU.APIServerSeconds/o.window.Seconds())})
	}
	return t
}

// firstMissed returns the lowest rate tried above the capacity that
// missed the objective, 0 if none did: the capacity lies between the two.
func (r capacityResult) firstMissed() float64 {
	m := 0.0
	for _, p := range r.Probes {
		if !p.Met && p.Rate > r.Rate && (m == 0 || p.Rate < m) {
			m = p.Rate
		}
	}
	return m
}

// capacities measures each replica count of -capacity and reports them.
func (d *driver) capacities(ctx context.Context) error {
	var res []capacityResult
	var runErr error
	for _, n := range d.o.capacity {
		r, err := d.capacity(ctx, n)
		if err != nil {
			runErr = fmt.Errorf("capacity of %d replicas: %w", n, err)
			break
		}
		res = append(res, r)
	}
	if len(res) == 0 {
		return runErr
	}
	t := capacityTable(d.o, res)
	t.print(os.Stdout)
	var md bytes.Buffer
	t.markdown(&md)
	js, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = os.MkdirAll(d.o.out, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(d.o.out, "scaleout-capacity.md"), md.Bytes(), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(d.o.out, "scaleout-capacity.json"), js, 0o644)
	}
	return errors.Join(runErr, err)
}
