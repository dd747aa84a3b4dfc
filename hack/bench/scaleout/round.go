package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// workNamespace holds the objects of every round, told apart by runLabel.
const workNamespace = "scaleout"

// driver runs rounds against one control plane and dependency.
type driver struct {
	o               options
	cs              kubernetes.Interface
	dep             *dependency
	bin, kubeconfig string
	layout          layout
}

// roundResult is one round of one replica count.
type roundResult struct {
	Round, Replicas  int
	Objects, Changes int
	// Seconds from the first write of the throughput phase until every
	// object was seen converged; PerSecond is Objects/Seconds.
	Seconds, PerSecond float64
	// WriteSeconds is how long the driver took to write the changes: when
	// close to Seconds, the writes, not the replicas, bound the round.
	WriteSeconds float64
	// DependencyCalls in the throughput phase: one per reconcile that
	// found work; fewer than Objects×Changes when changes were coalesced.
	DependencyCalls int64
	// HeapAfterSync and HeapAtEnd hold each replica's heap in use, after
	// the settle and after the throughput phase: what the live objects
	// take and what garbage not yet collected does, so a reading depends
	// on where in its collection cycle the replica was.
	HeapAfterSync, HeapAtEnd []int64
	// LiveAfterSync and LiveAtEnd hold each replica's heap allocated
	// right after a collection it was made to run at those two points:
	// the objects it holds, the cache's among them.
	LiveAfterSync, LiveAtEnd []int64
	// CPU spent in the throughput phase: when MachineBusy nears 1, the
	// cores, not the dependency, bound the round.
	CPU cpuUse
	// BusiestShare is the largest fraction of the throughput phase's
	// dependency calls that one replica made: 1/Replicas when the slots
	// split the work evenly. Where the dependency bounds every replica,
	// the phase lasts as long as the busiest one's part, so the speed-up
	// over one replica is at most 1/BusiestShare.
	BusiestShare float64
	// HeadSeconds is how long the busiest replica waited, from the first
	// write of the throughput phase, to call the dependency first, and
	// TailSeconds how long after its last call the phase ended;
	// CallMillis is the time its workers took per call between the two
	// (the dependency's delay, the write, and the waits for a core): what
	// the phase's time is made of.
	HeadSeconds, TailSeconds, CallMillis float64
	// ReconcileMillis is the busiest replica's reconcile time per call
	// (its reconciles' time over its calls: the reconciles of its own
	// writes' events find nothing to do and take microseconds), and
	// PatchMillis its mean PATCH round trip, to the response headers.
	ReconcileMillis, PatchMillis float64
	// KillSeconds from the SIGKILL of one replica until every object was
	// seen converged, TakeoverSeconds until the others held every slot,
	// and DeadSlotsSeconds until the killed replica's slots were each
	// claimed by one of the others alone (which holds it from that
	// renewal's round on); rounds of more than one replica only. A swap
	// of two survivors' own slots under way when they first hold every
	// slot counts in TakeoverSeconds, not in DeadSlotsSeconds.
	KillSeconds, TakeoverSeconds, DeadSlotsSeconds float64 `json:",omitempty"`
	// BalanceMoves is how many slots changed hands during the warm-up:
	// the swaps that balanced the slots by load.
	BalanceMoves int `json:",omitempty"`
	// PlanShare is the busiest replica's share of the loads in the plan
	// the replicas balanced on (its slots' loads over all of them), and
	// ObjectShare its share of the objects, both as the slots rested
	// after the warm-up. BusiestShare above PlanShare is work the plan
	// measured wrong; PlanShare above 1/Replicas is what the balancing
	// left.
	PlanShare, ObjectShare float64 `json:",omitempty"`
	// PlanLoads and SlotObjects hold, slot by slot, the plan's load and
	// the count of objects, as the slots rested after the warm-up; Owners
	// who held each slot then.
	PlanLoads, SlotObjects []float64 `json:",omitempty"`
	Owners                 []string  `json:",omitempty"`
	// Moved lists the slots that changed hands in the warm-up.
	Moved []int `json:",omitempty"`
	// PhaseMoves is how many slots changed hands (or were mid-move at
	// either end) during the throughput phase: balancing that the warm-up
	// left to do, which the phase pays for.
	PhaseMoves int `json:",omitempty"`
	// EarlyMillis and LateMillis are, with -trace, the median duration
	// of the first and the last fifth of the timed phase's reconciles
	// that called the dependency, in the order they began.
	EarlyMillis, LateMillis float64 `json:",omitempty"`
	// SlotSyncMax is the longest a slot gained in the round waited, on
	// any surviving replica, from being held to its keys being admitted
	// (opkit_sharding_slot_sync_seconds, the bucket's upper bound): the
	// gap of a moved slot after its takeover.
	SlotSyncMax float64 `json:",omitempty"`
}

// stage is a run's objects, the watch of their progress, and its
// replicas.
type stage struct {
	d           *driver
	run, group  string
	prog        *progress
	rs          []*replica
	createdObjs bool
}

// stage creates run's objects, watches them, starts n replicas in a group
// of the run's own (a killed replica's Lease stays behind) and waits until
// their membership has settled. Close it, also after an error.
func (d *driver) stage(ctx context.Context, run string, n int) (*stage, error) {
	st := &stage{d: d, run: run, group: "scaleout-" + run}
	if err := createAll(ctx, d.cs, run, d.layout.of, d.o.objects, ""); err != nil {
		return st, err
	}
	st.createdObjs = true
	var err error
	key := sharding.ByUID
	if d.o.skewed {
		key = sharding.ByNamespace
	}
	if st.prog, err = watchProgress(ctx, d.cs, run, "", key); err != nil {
		return st, err
	}
	for i := range n {
		r, err := startReplica(d.o, d.bin, d.kubeconfig, st.group, fmt.Sprintf("r%d", i), d.dep.url, filepath.Join(d.o.binDir, "logs", fmt.Sprintf("scaleout-%s-%d.log", run, i)))
		if err != nil {
			return st, err
		}
		st.rs = append(st.rs, r)
	}
	return st, waitSettled(ctx, st.rs, slots, 2*time.Minute)
}

// close stops the replicas and the watch, and deletes the objects.
func (st *stage) close(ctx context.Context) error {
	var err error
	for _, r := range st.rs {
		err = errors.Join(err, r.stop())
	}
	if st.prog != nil {
		st.prog.close()
	}
	if st.createdObjs {
		err = errors.Join(err, deleteRun(ctx, st.d.cs, st.run, st.d.layout.namespaces()...))
	}
	return err
}

// round runs one round of n replicas.
func (d *driver) round(ctx context.Context, round, n int) (res roundResult, err error) {
	o := d.o
	run := fmt.Sprintf("r%d-%d", round, n)
	res = roundResult{Round: round, Replicas: n, Objects: o.objects, Changes: o.changes}
	st, err := d.stage(ctx, run, n)
	defer func() { err = errors.Join(err, st.close(ctx)) }()
	if err != nil {
		return res, err
	}
	prog, rs, group := st.prog, st.rs, st.group
	if res.HeapAfterSync, err = heaps(ctx, rs); err != nil {
		return res, err
	}
	if err := d.heapProfiles(ctx, run+"-sync", rs); err != nil {
		return res, err
	}
	if res.LiveAfterSync, err = liveHeaps(ctx, rs); err != nil {
		return res, err
	}
	if err := d.warm(ctx, run, group, prog, rs, &res); err != nil {
		return res, err
	}
	before, err := claims(ctx, d.cs, group)
	if err != nil {
		return res, err
	}
	if err := d.throughput(ctx, run, prog, rs, &res); err != nil {
		return res, err
	}
	after, err := claims(ctx, d.cs, group)
	if err != nil {
		return res, err
	}
	for s := range slots {
		if before[s] != after[s] {
			res.PhaseMoves++
		}
	}
	if res.HeapAtEnd, err = heaps(ctx, rs); err != nil {
		return res, err
	}
	if res.LiveAtEnd, err = liveHeaps(ctx, rs); err != nil {
		return res, err
	}
	if err := d.heapProfiles(ctx, run+"-end", rs); err != nil {
		return res, err
	}
	if n > 1 {
		if err = d.kill(ctx, run, prog, rs, &res); err != nil {
			return res, err
		}
	}
	res.SlotSyncMax, err = slotSyncMax(ctx, rs)
	return res, err
}

// slotSyncMax returns the upper bound of the highest bucket holding an
// observation of opkit_sharding_slot_sync_seconds on any live replica.
func slotSyncMax(ctx context.Context, rs []*replica) (float64, error) {
	worst := 0.0
	for _, r := range rs {
		if r.killed {
			continue
		}
		body, err := r.scrape(ctx)
		if err != nil {
			return 0, err
		}
		h, err := promtext.ReadHistogram(bytes.NewReader(body), "opkit_sharding_slot_sync_seconds", nil)
		if err != nil {
			return 0, err
		}
		switch q := h.Quantile(1); {
		case math.IsInf(q, 1) && len(h.Bounds) > 1: // beyond the last bound: report that bound
			worst = max(worst, h.Bounds[len(h.Bounds)-2])
		case !math.IsNaN(q): // NaN: no slot gained
			worst = max(worst, q)
		}
	}
	return worst, nil
}

// throughput changes every object o.changes times and waits until all
// have converged.
func (d *driver) throughput(ctx context.Context, run string, prog *progress, rs []*replica, res *roundResult) error {
	calls := d.dep.calls.Load()
	byReplica := make([]int64, len(rs))
	for i, r := range rs {
		byReplica[i] = d.dep.callsOf(r.cmd.Process.Pid)
	}
	cpu0, err := sampleCPU(ctx, d.cs, rs)
	if err != nil {
		return err
	}
	times0, err := readTimings(ctx, rs)
	if err != nil {
		return err
	}
	profiled := d.profile(ctx, run, rs)
	d.dep.mark()
	start := time.Now()
	last := d.o.warmup + d.o.changes
	for gen := d.o.warmup + 1; gen <= last; gen++ {
		if err := bump(ctx, d.cs, run, d.layout.of, d.o.objects, gen, nil); err != nil {
			return err
		}
	}
	res.WriteSeconds = time.Since(start).Seconds()
	end, err := prog.wait(ctx, d.o.objects, last, d.o.phaseTimeout)
	if err != nil {
		return err
	}
	res.Seconds = end.Sub(start).Seconds()
	res.PerSecond = float64(d.o.objects) / res.Seconds
	res.DependencyCalls = d.dep.calls.Load() - calls
	cpu1, err := sampleCPU(ctx, d.cs, rs)
	if err != nil {
		return err
	}
	res.CPU = cpu0.until(cpu1)
	times1, err := readTimings(ctx, rs)
	if err != nil {
		return err
	}
	if err := <-profiled; err != nil {
		return err
	}
	busiest := int64(-1)
	for i, r := range rs {
		n := d.dep.callsOf(r.cmd.Process.Pid) - byReplica[i]
		if res.DependencyCalls > 0 {
			res.BusiestShare = max(res.BusiestShare, float64(n)/float64(res.DependencyCalls))
		}
		if n <= busiest {
			continue
		}
		busiest = n
		first, last := d.dep.span(r.cmd.Process.Pid)
		if n > 1 {
			res.HeadSeconds, res.TailSeconds = first.Sub(start).Seconds(), end.Sub(last).Seconds()
			res.CallMillis = 1000 * last.Sub(first).Seconds() * float64(d.o.workers) / float64(n-1)
		}
		rec, patch := times1[i].reconcile.Since(times0[i].reconcile), times1[i].patch.Since(times0[i].patch)
		if n > 0 {
			res.ReconcileMillis = 1000 * rec.Sum / float64(n)
		}
		if patch.Count() > 0 {
			res.PatchMillis = 1000 * patch.Mean()
		}
	}
	if d.o.trace {
		// Read last: a reconcile writes its line after its PATCH, which
		// the watch may have seen first.
		var all []traced
		for _, r := range rs {
			t, err := readTrace(tracePath(r.log.Name()), start, end, d.o.delay)
			if err != nil {
				return err
			}
			all = append(all, t...)
		}
		slices.SortFunc(all, func(a, b traced) int { return a.start.Compare(b.start) })
		res.EarlyMillis, res.LateMillis = earlyLate(all)
	}
	return nil
}

// kill changes every object once more and SIGKILLs victim once half of
// those writes are done, then times until the survivors claim the
// victim's slots, until they hold every slot and until every object has
// converged.
func (d *driver) kill(ctx context.Context, run string, prog *progress, rs []*replica, res *roundResult) error {
	victim, survivors := rs[0], rs[1:]
	group := "scaleout-" + run
	victimLease := group + "-" + victim.identity
	gen := d.o.warmup + d.o.changes + 1
	var once sync.Once
	var killedAt time.Time
	var killErr error
	takeover, claimed := make(chan error, 1), make(chan error, 1)
	err := bump(ctx, d.cs, run, d.layout.of, d.o.objects, gen, func(written int) {
		if written >= d.o.objects/2 {
			once.Do(func() {
				var dead []int
				if dead, killErr = claimedBy(ctx, d.cs, group, victimLease); killErr != nil {
					return
				}
				killedAt, killErr = time.Now(), victim.kill()
				go func() {
					at, err := waitHeld(ctx, survivors, slots, d.o.phaseTimeout)
					res.TakeoverSeconds = at.Sub(killedAt).Seconds()
					takeover <- err
				}()
				go func() {
					at, err := waitClaimedElsewhere(ctx, d.cs, group, victimLease, dead, d.o.phaseTimeout)
					res.DeadSlotsSeconds = at.Sub(killedAt).Seconds()
					claimed <- err
				}()
			})
		}
	})
	if err = errors.Join(err, killErr); err != nil {
		return err
	}
	end, err := prog.wait(ctx, d.o.objects, gen, d.o.phaseTimeout)
	if err = errors.Join(err, <-takeover, <-claimed); err != nil {
		return fmt.Errorf("after the kill: %w", err)
	}
	res.KillSeconds = end.Sub(killedAt).Seconds()
	return nil
}

// heaps reads every replica's heap in use.
func heaps(ctx context.Context, rs []*replica) ([]int64, error) {
	var out []int64
	for _, r := range rs {
		v, err := r.gauge(ctx, heapMetric)
		if err != nil {
			return nil, err
		}
		out = append(out, int64(v))
	}
	return out, nil
}

// timings are one replica's reconcile times and PATCH round trips.
type timings struct{ reconcile, patch promtext.Histogram }

func readTimings(ctx context.Context, rs []*replica) ([]timings, error) {
	var out []timings
	for _, r := range rs {
		body, err := r.scrape(ctx)
		if err != nil {
			return nil, err
		}
		var t timings
		if t.reconcile, err = promtext.ReadHistogram(bytes.NewReader(body), reconcileMetric, map[string]string{"controller": controllerName}); err != nil && !errors.Is(err, promtext.ErrNoMetric) {
			return nil, err
		}
		if t.patch, err = promtext.ReadHistogram(bytes.NewReader(body), requestMetric, map[string]string{"verb": "PATCH"}); err != nil && !errors.Is(err, promtext.ErrNoMetric) {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// liveHeaps makes every replica run a garbage collection (through
// /debug/pprof/heap?gc=1) and then reads its heap allocated.
func liveHeaps(ctx context.Context, rs []*replica) ([]int64, error) {
	var out []int64
	for _, r := range rs {
		if _, ok, err := get(ctx, "http://"+r.metricsAddr+"/debug/pprof/heap?gc=1"); err != nil || !ok {
			return nil, errors.Join(fmt.Errorf("replica %s: collect its garbage", r.metricsAddr), err)
		}
		v, err := r.gauge(ctx, liveMetric)
		if err != nil {
			return nil, err
		}
		out = append(out, int64(v))
	}
	return out, nil
}

// warm changes every object o.warmup times, so that the replicas measure
// their slots' loads and, with -balance-half-life, swap slots to even
// them out; then it waits until the slots rest (every slot claimed once
// and no claim changed for four renewals) with no balancing left to do.
// It records how many slots moved meanwhile, and the busiest replica's
// shares of the objects and of the plan's loads then.
func (d *driver) warm(ctx context.Context, run, group string, prog *progress, rs []*replica, res *roundResult) error {
	if d.o.warmup == 0 {
		return nil
	}
	before, err := claims(ctx, d.cs, group)
	if err != nil {
		return err
	}
	for gen := 1; gen <= d.o.warmup; gen++ {
		if err := bump(ctx, d.cs, run, d.layout.of, d.o.objects, gen, nil); err != nil {
			return err
		}
		if _, err := prog.wait(ctx, d.o.objects, gen, d.o.phaseTimeout); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	after, err := d.balanced(ctx, group, rs)
	if err != nil {
		return err
	}
	for s, who := range after {
		if before[s] != who {
			res.BalanceMoves++
			res.Moved = append(res.Moved, s)
		}
	}
	res.SlotObjects = prog.perSlot()
	res.ObjectShare = busiestShare(after, res.SlotObjects)
	res.Owners = make([]string, slots)
	for s := range res.Owners {
		res.Owners[s] = after[s]
	}
	if res.PlanLoads, err = groupPlan(ctx, d.cs, group); err != nil {
		return err
	}
	if res.PlanLoads != nil {
		res.PlanShare = busiestShare(after, res.PlanLoads)
	}
	return nil
}

// balanced waits until the slots of group rest and, with balancing by
// load, the replicas have no balancing left (balancePending): the plan
// they rested on may predate the last of the warm-up's work, whose loads
// then make the planner plan again. It returns the claims then.
func (d *driver) balanced(ctx context.Context, group string, rs []*replica) (map[int]string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.o.phaseTimeout)
	defer cancel()
	for {
		rest, err := restingClaims(ctx, d.cs, group, rs, 4*d.o.retry, d.o.phaseTimeout)
		if err != nil || d.o.balance == 0 {
			return rest, err
		}
		for moved := false; !moved; {
			pending, err := balancePending(ctx, d.cs, group)
			if err != nil || !pending {
				return rest, err
			}
			cur, err := claims(ctx, d.cs, group)
			if err != nil {
				return nil, err
			}
			moved = !maps.Equal(cur, rest)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("the replicas left their slots uneven by their own loads, and moved none, within %v", d.o.phaseTimeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
