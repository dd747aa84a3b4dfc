package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// workNamespace holds the objects of every round, told apart by runLabel.
const workNamespace = "scaleout"

// driver runs rounds against one control plane and dependency.
type driver struct {
	o               options
	cs              kubernetes.Interface
	dep             *dependency
	bin, kubeconfig string
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
	// the settle and after the throughput phase.
	HeapAfterSync, HeapAtEnd []int64
	// CPU spent in the throughput phase: when MachineBusy nears 1, the
	// cores, not the dependency, bound the round.
	CPU cpuUse
	// BusiestShare is the largest fraction of the throughput phase's
	// dependency calls that one replica made: 1/Replicas when the slots
	// split the work evenly. Where the dependency bounds every replica,
	// the phase lasts as long as the busiest one's part, so the speed-up
	// over one replica is at most 1/BusiestShare.
	BusiestShare float64
	// KillSeconds from the SIGKILL of one replica until every object was
	// seen converged, and TakeoverSeconds until the others held every
	// slot; rounds of more than one replica only.
	KillSeconds, TakeoverSeconds float64 `json:",omitempty"`
}

// round runs one round of n replicas.
func (d *driver) round(ctx context.Context, round, n int) (res roundResult, err error) {
	o := d.o
	run := fmt.Sprintf("r%d-%d", round, n)
	res = roundResult{Round: round, Replicas: n, Objects: o.objects, Changes: o.changes}
	if err := createAll(ctx, d.cs, run, workNamespace, o.objects, ""); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, deleteRun(ctx, d.cs, run, workNamespace)) }()
	prog, err := watchProgress(ctx, d.cs, run, workNamespace)
	if err != nil {
		return res, err
	}
	defer prog.close()
	var rs []*replica
	defer func() {
		for _, r := range rs {
			err = errors.Join(err, r.stop())
		}
	}()
	// A group per round: a killed replica's Lease stays behind.
	group := "scaleout-" + run
	for i := range n {
		r, err := startReplica(o, d.bin, d.kubeconfig, group, d.dep.url, filepath.Join(o.binDir, "logs", fmt.Sprintf("scaleout-%s-%d.log", run, i)))
		if err != nil {
			return res, err
		}
		rs = append(rs, r)
	}
	if err := waitSettled(ctx, rs, slots, 2*time.Minute); err != nil {
		return res, err
	}
	if res.HeapAfterSync, err = heaps(ctx, rs); err != nil {
		return res, err
	}
	if err := d.throughput(ctx, run, prog, rs, &res); err != nil {
		return res, err
	}
	if res.HeapAtEnd, err = heaps(ctx, rs); err != nil {
		return res, err
	}
	if n > 1 {
		err = d.kill(ctx, run, prog, rs, &res)
	}
	return res, err
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
	start := time.Now()
	for gen := 1; gen <= d.o.changes; gen++ {
		if err := bump(ctx, d.cs, run, workNamespace, d.o.objects, gen, nil); err != nil {
			return err
		}
	}
	res.WriteSeconds = time.Since(start).Seconds()
	end, err := prog.wait(ctx, d.o.objects, d.o.changes, d.o.phaseTimeout)
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
	for i, r := range rs {
		if n := d.dep.callsOf(r.cmd.Process.Pid) - byReplica[i]; res.DependencyCalls > 0 {
			res.BusiestShare = max(res.BusiestShare, float64(n)/float64(res.DependencyCalls))
		}
	}
	return nil
}

// kill changes every object once more and SIGKILLs victim once half of
// those writes are done, then times until the survivors hold every slot
// and until every object has converged.
func (d *driver) kill(ctx context.Context, run string, prog *progress, rs []*replica, res *roundResult) error {
	victim, survivors := rs[0], rs[1:]
	gen := d.o.changes + 1
	var once sync.Once
	var killedAt time.Time
	var killErr error
	takeover := make(chan error, 1)
	err := bump(ctx, d.cs, run, workNamespace, d.o.objects, gen, func(written int) {
		if written >= d.o.objects/2 {
			once.Do(func() {
				killedAt, killErr = time.Now(), victim.kill()
				go func() {
					at, err := waitHeld(ctx, survivors, slots, d.o.phaseTimeout)
					res.TakeoverSeconds = at.Sub(killedAt).Seconds()
					takeover <- err
				}()
			})
		}
	})
	if err = errors.Join(err, killErr); err != nil {
		return err
	}
	end, err := prog.wait(ctx, d.o.objects, gen, d.o.phaseTimeout)
	if err = errors.Join(err, <-takeover); err != nil {
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
