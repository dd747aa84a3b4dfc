package memguard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const mib = 1 << 20

// process is a scripted process: its CPU grows at the rates set, and its
// samples say so.
type process struct {
	mu             sync.Mutex
	at             time.Time // of the last rate change
	gc, used       float64   // seconds at at
	gcRate, usRate float64   // cores
	file, live     int64
	goal           int64 // the heap goal; 0: unknown
	limiter        int64 // the last cycle the GC CPU limiter was on
}

func (p *process) set(gcCores, usedCores float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance()
	p.gcRate, p.usRate = gcCores, usedCores
}

func (p *process) advance() {
	now := time.Now()
	if !p.at.IsZero() {
		d := now.Sub(p.at).Seconds()
		p.gc += p.gcRate * d
		p.used += p.usRate * d
	}
	p.at = now
}

// setMemory sets the resident file pages and the live heap, in MiB.
func (p *process) setMemory(file, live int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.file, p.live = file*mib, live*mib
}

// setGoal sets the heap goal, in MiB.
func (p *process) setGoal(goal int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.goal = goal * mib
}

func (p *process) read() (Sample, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance()
	return Sample{FileBytes: p.file, GCSeconds: p.gc, UsedSeconds: p.used, LiveHeapBytes: p.live, HeapGoalBytes: p.goal,
		GOGC: 100, LimiterCycle: p.limiter}, nil
}

// The limit is the cgroup's less the binary's resident pages, times the
// ratio; it falls as more of the binary becomes resident, and never rises
// again.
func TestLimitLeavesRoomForTheBinary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 10 * mib}
		var set []int64
		g, err := New(Options{CgroupBytes: 100 * mib, Ratio: 0.5, Read: p.read, SetLimit: func(b int64) { set = append(set, b) }})
		if err != nil {
			t.Fatal(err)
		}
		st, err := g.Start()
		if err != nil {
			t.Fatal(err)
		}
		if st.LimitBytes != 40*mib || st.ReservedBytes != 20*mib {
			t.Errorf("after Start: limit %d, reserved %d; want 40 MiB (half of 100 less 20) and 20 MiB", st.LimitBytes, st.ReservedBytes)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- g.Run(ctx) }()
		for _, file := range []int64{30, 26, 30, 90} {
			p.setMemory(file, 10)
			time.Sleep(2 * time.Second)
			synctest.Wait()
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// 90 MiB of 100 leaves less than the quarter kept for the heap.
		want := []int64{40 * mib, 35 * mib, 25 * mib / 2}
		if diff := cmp.Diff(want, set); diff != "" {
			t.Errorf("limits set (-want +got):\n%s", diff)
		}
	})
}

// Pressure begins when the collector takes a large share of the CPU, or
// the live heap nears the limit, and ends when both are calm again; each
// change is reported once.
func TestPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 10 * mib, live: 10 * mib}
		var changes []bool
		g, err := New(Options{CgroupBytes: 110 * mib, Ratio: 1, Read: p.read, SetLimit: func(int64) {},
			Pressure: func(s State) { changes = append(changes, s.Pressure) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- g.Run(ctx) }()
		step := func(what string, d time.Duration, want bool) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if g.state.Pressure != want {
				t.Errorf("%s: pressure %v, want %v (state %+v)", what, g.state.Pressure, want, g.state)
			}
		}
		p.set(0.01, 0.5)
		step("busy, little GC", 12*time.Second, false)
		p.set(0.2, 0.5)
		step("GC 40% of the CPU", 12*time.Second, true)
		p.set(0.01, 0.5)
		step("calm again", 12*time.Second, false)
		p.set(0.003, 0.005)
		step("idle: a large share of nearly nothing", 12*time.Second, false)
		p.setMemory(10, 95)
		step("live heap at 95% of the limit", 2*time.Second, true)
		p.setMemory(10, 80)
		step("live heap at 80%", 2*time.Second, false)
		p.setMemory(10, 40)
		p.setGoal(55)
		step("the limit leaves the collector 37% of its room", 2*time.Second, true)
		p.setGoal(80)
		step("all of it", 2*time.Second, false)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]bool{true, false, true, false, true, false}, changes); diff != "" {
			t.Errorf("pressure changes (-want +got):\n%s", diff)
		}
	})
}

// A process that stays GC-bound for ExitAfter makes Run fail with an
// error that says how large a limit would fit; one that recovers in time
// does not.
func TestGCBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 60 * mib}
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- g.Run(t.Context()) }()
		start := time.Now()
		p.set(0.9, 1)
		time.Sleep(20 * time.Second)
		p.set(0.05, 1) // a break
		time.Sleep(20 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned %v after %v, before the process was GC-bound for 30s", err, time.Since(start))
		default:
		}
		p.set(0.9, 1)
		err = <-done
		if !errors.Is(err, ErrGCBound) {
			t.Fatalf("Run = %v, want ErrGCBound", err)
		}
		for _, want := range []string{"60 MiB live of the 72 MiB Go memory limit", "100 MiB, less 20 MiB", "at least 120 MiB"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q:\n%v", want, err)
			}
		}
	})
}

// A failed reading keeps the limit and goes on.
func TestReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs []error
		n := 0
		g, err := New(Options{CgroupBytes: 100 * mib, SetLimit: func(int64) {},
			Read: func() (Sample, error) {
				n++
				if n == 2 {
					return Sample{}, errors.New("no /proc")
				}
				return Sample{FileBytes: 10 * mib}, nil
			},
			ReadError: func(err error) { errs = append(errs, err) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := g.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if len(errs) != 1 || g.state.LimitBytes != 81*mib {
			t.Errorf("errors %v, limit %d; want one error and the limit kept at 81 MiB", errs, g.state.LimitBytes)
		}
	})
}

func TestNewRejects(t *testing.T) {
	for _, o := range []Options{{CgroupBytes: -1}, {CgroupBytes: 1, Ratio: 1.5}, {CgroupBytes: 1, Ratio: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) = nil error", o)
		}
	}
}

// Without a container limit the Guard sets none and never fails, but
// still measures the reserve and reports pressure.
func TestWatchOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 60 * mib}
		var pressure []bool
		g, err := New(Options{Read: p.read, SetLimit: func(int64) { t.Error("SetLimit called without a container limit") },
			Pressure: func(s State) { pressure = append(pressure, s.Pressure) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.9, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		if err := g.Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil: without a limit there is nothing to exceed", err)
		}
		if g.state.ReservedBytes != 20*mib || g.state.LimitBytes != 0 || len(pressure) != 1 {
			t.Errorf("state %+v, pressure changes %v; want 20 MiB reserved, no limit, pressure begun", g.state, pressure)
		}
	})
}

// The collector also spins, short of most of the CPU, when the live heap
// does not fit the limit, or when the runtime's limiter holds it to half
// the CPU: either, for ExitAfter, fails Run.
func TestGCBoundShortOfMostOfTheCPU(t *testing.T) {
	for _, tt := range []struct {
		name          string
		live, limiter int64 // MiB; the limiter's cycle each tick
	}{
		{"live heap over the limit", 75, 0},
		{"limiter on", 40, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &process{file: 20 * mib, live: tt.live * mib}
				g, err := New(Options{CgroupBytes: 100 * mib, Read: func() (Sample, error) {
					p.mu.Lock()
					p.limiter += tt.limiter
					p.mu.Unlock()
					return p.read()
				}, SetLimit: func(int64) {}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Start(); err != nil {
					t.Fatal(err)
				}
				p.set(0.3, 1) // 30% of the CPU, 0.3 cores
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				if err := g.Run(ctx); !errors.Is(err, ErrGCBound) {
					t.Fatalf("Run = %v, want ErrGCBound", err)
				}
			})
		})
	}
	// Neither: pressure, not bound.
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 40 * mib}
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.3, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		if err := g.Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil: the heap fits and the limiter never came on", err)
		}
	})
}

// A GC-bound process whose live heap is over the limit fails within
// seconds, not after ExitAfter: no collection can bring it under.
func TestOverTheLimitFailsSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 80 * mib}
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.3, 1)
		start := time.Now()
		if err := g.Run(t.Context()); !errors.Is(err, ErrGCBound) {
			t.Fatalf("Run = %v, want ErrGCBound", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Run failed after %v, want within 10s of the live heap (80 MiB) going over the limit (72 MiB)", took)
		}
	})
}

// A process whose heap fits the limit, but with too little room past it
// for the collector to work in, crawls: each collection begins soon after
// the last ends. GC-bound so for seconds fails Run, with a limit that
// leaves room, counting what the runtime holds beyond the heap; with
// enough room the same collector's CPU is pressure, not bound.
func TestTooLittleRoomFailsSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 40 * mib, goal: 44 * mib} // 10% of GOGC's room
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.3, 1) // 30% of the CPU: short of most of it
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		err = g.Run(ctx)
		if !errors.Is(err, ErrGCBound) {
			t.Fatalf("Run = %v, want ErrGCBound", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Run failed after %v, want within 10s", took)
		}
		// 40 MiB live with half GOGC's room (60), and the 28 MiB the
		// runtime holds beyond a 44 MiB goal under a 72 MiB limit, over
		// 0.9, plus the 20 MiB reserve: 117.8 MiB.
		for _, want := range []string{"40 MiB live of the 72 MiB Go memory limit and 10% of its room", "at least 118 MiB",
			"the cache had not synced"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q:\n%v", want, err)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 40 * mib, goal: 56 * mib} // 40% of GOGC's room
		var pressure []bool
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {},
			Pressure: func(s State) { pressure = append(pressure, s.Pressure) }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.3, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		if err := g.Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil: the collector has room enough", err)
		}
		if len(pressure) != 1 || !pressure[0] {
			t.Errorf("pressure changes %v, want it begun", pressure)
		}
	})
}

// Once the cache has synced, a heap that leaves the collector under a
// quarter of its room fails at once, judged after a collection when the
// limit holds the heap goal down; one with room, or a Guard that may not
// fail, passes.
func TestSynced(t *testing.T) {
	for _, tt := range []struct {
		name       string
		goal       int64 // MiB; the live heap is 40 MiB of a 72 MiB limit
		exitAfter  time.Duration
		want       string // in the error; "": none
		collection bool
	}{
		{name: "no room", goal: 44, want: "40 MiB live of the 72 MiB Go memory limit, leaving the collector 10% of the room", collection: true},
		{name: "over the limit", goal: 72, want: "at least", collection: true},
		{name: "room enough", goal: 60, collection: true},
		{name: "all of GOGC's room", goal: 80},
		{name: "may not fail", goal: 44, exitAfter: -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &process{file: 20 * mib, live: 40 * mib, goal: tt.goal * mib}
				if tt.name == "over the limit" {
					p.live = 75 * mib
				}
				collections := 0
				g, err := New(Options{CgroupBytes: 100 * mib, ExitAfter: tt.exitAfter, Read: p.read, SetLimit: func(int64) {},
					Collect: func() { collections++ }})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Start(); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- g.Run(ctx) }()
				err = g.Synced(t.Context())
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("Synced = %v, want nil", err)
				case tt.want != "" && (!errors.Is(err, ErrGCBound) || !strings.Contains(err.Error(), tt.want)):
					t.Errorf("Synced = %v, want ErrGCBound saying %q", err, tt.want)
				}
				if got := collections > 0; got != tt.collection {
					t.Errorf("collected %d times, want a collection %v", collections, tt.collection)
				}
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run = %v, want nil: Synced's verdict is Synced's to return", err)
				}
			})
		})
	}
	// A nil Guard (MemoryLimitOptions.Off), and one whose Run has ended.
	if err := (*Guard)(nil).Synced(t.Context()); err != nil {
		t.Errorf("nil Guard: Synced = %v", err)
	}
	g, err := New(Options{CgroupBytes: 100 * mib, SetLimit: func(int64) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Synced(ctx); err != nil {
		t.Errorf("ended: Synced = %v", err)
	}
}

// A live heap over the limit fails within seconds even when the collector
// takes little CPU: the process then waits on the kernel reclaiming the
// binary's pages more than it collects.
func TestOverTheLimitFailsWithoutTheCollectorsCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &process{file: 20 * mib, live: 80 * mib}
		g, err := New(Options{CgroupBytes: 100 * mib, Read: p.read, SetLimit: func(int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Start(); err != nil {
			t.Fatal(err)
		}
		p.set(0.05, 0.2)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := g.Run(ctx); !errors.Is(err, ErrGCBound) {
			t.Fatalf("Run = %v, want ErrGCBound", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Run failed after %v, want within 10s", took)
		}
	})
}
