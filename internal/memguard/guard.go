package memguard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
)

// ErrGCBound is wrapped by the error Run returns when the collector has
// taken most of the process's CPU for Options.ExitAfter.
var ErrGCBound = errors.New("the Go memory limit is too small for what the operator holds")

// Options configure a Guard.
type Options struct {
	// CgroupBytes is the container's memory limit. 0: none; the Guard
	// then only watches: it sets no limit and never fails.
	CgroupBytes int64
	// Ratio is the share given to the Go runtime of the cgroup's limit
	// less the measured reserve, in (0, 1]. Defaults to 0.9.
	Ratio float64
	// Interval is how often the Guard reads a Sample. Defaults to 2s.
	Interval time.Duration
	// Window is the span over which the collector's share of the CPU is
	// judged. Defaults to 10s.
	Window time.Duration
	// ExitAfter is how long the process may be GC-bound before Run
	// fails. Defaults to 30s; negative: never.
	ExitAfter time.Duration
	// Read reads a Sample. Defaults to a Reader's Read.
	Read func() (Sample, error)
	// SetLimit sets the Go memory limit. Defaults to debug.SetMemoryLimit.
	SetLimit func(int64)
	// Collect runs a garbage collection. Defaults to runtime.GC.
	Collect func()
	// Observe is called with every reading. Defaults to nothing.
	Observe func(State)
	// Pressure is called when pressure begins (true) or ends (false), as
	// State.Pressure changes. Defaults to nothing.
	Pressure func(State)
	// ReadError is called when Read fails; the Guard keeps the last
	// limit and goes on. Defaults to nothing.
	ReadError func(error)
}

// State is what a Guard found at one reading.
type State struct {
	// LimitBytes is the Go memory limit; ReservedBytes what was kept
	// out of the cgroup's limit for what the runtime does not count (the
	// most seen of the cgroup's charge beyond the runtime's memory, or of
	// the process's resident file pages, whichever is more).
	LimitBytes, ReservedBytes int64
	// LiveHeapBytes is the heap the last collection found live.
	LiveHeapBytes int64
	// Room is the collector's room to work: how far the heap may grow
	// past the live heap before the next collection, as a share of what
	// GOGC alone would allow (1: the limit leaves all of it; 0: none, each
	// collection begins as the last ends); 1 when unknown.
	Room float64
	// GCShare is the collector's share of the CPU the process used over
	// the last Window, and GCCores that CPU in cores.
	GCShare, GCCores float64
	// Pressure is whether memory runs short: the collector's share is
	// high, or the live heap near the limit.
	Pressure bool
	// GCBoundFor is how long the process has been GC-bound without a
	// break; 0 when it is not.
	GCBoundFor time.Duration
}

// The thresholds of pressure and of GC-bound, with hysteresis: pressure
// begins at pressureShare of the CPU (and pressureCores at least), with
// the live heap at pressureHeap of the limit or with the collector's room
// under pressureRoom, and ends once all are back at their calm values.
// GC-bound is the collector using boundCores and boundShare of the CPU,
// or boundCores with the live heap at boundHeap of the limit, with its
// room under tightRoom, or with the runtime's GC CPU limiter on.
//
// The collector's work per byte allocated grows as its room shrinks: with
// a quarter of GOGC's room, each byte costs four times the marking it
// costs with all of it, and the program's allocations wait on it.
const (
	pressureShare = 0.25
	calmShare     = 0.15
	pressureCores = 0.05
	pressureHeap  = 0.9
	calmHeap      = 0.85
	pressureRoom  = 0.5
	calmRoom      = 0.6
	boundShare    = 0.5
	boundHeap     = 0.95
	boundCores    = 0.25
	tightRoom     = 0.25
)

// tightExit is how long a GC-bound process whose collector has under
// tightRoom of its room (or whose live heap is over the limit, which no
// collection can bring under it) runs before Run fails, if ExitAfter is
// longer: the operator then crawls, each collection beginning as the
// last ends, for as long as it has work.
const tightExit = 6 * time.Second

// minShare is the smallest share of the cgroup's limit the Go limit is
// given, whatever the reserve: a binary whose pages take more leaves the
// operator no room to run, and the log says so.
const minShare = 0.25

// Guard keeps the Go memory limit inside the container's (see the
// package doc).
type Guard struct {
	opts    Options
	window  []Sample // the readings of the last Window, oldest first
	state   State
	boundAt time.Time       // when the current GC-bound spell began
	tightAt time.Time       // since when the collector has had under tightRoom; zero: it has not
	synced  chan chan error // Synced's requests, which Run answers
	sawSync bool            // Synced has been answered: the cache holds what it listed
	// beyondHeap is what the runtime holds beyond the heap (stacks, its
	// own metadata, free and partly used spans): the limit less the heap
	// goal, at the last reading where the limit set the goal.
	beyondHeap int64
}

// New returns a Guard; it sets nothing until Start.
func New(opts Options) (*Guard, error) {
	if opts.CgroupBytes < 0 {
		return nil, fmt.Errorf("memguard: CgroupBytes is %d: pass the container's memory limit, or 0 for none", opts.CgroupBytes)
	}
	if math.IsNaN(opts.Ratio) || opts.Ratio < 0 || opts.Ratio > 1 {
		return nil, fmt.Errorf("memguard: Ratio is %v: it must be 0 (the default, 0.9) or in (0, 1]", opts.Ratio)
	}
	if opts.Ratio == 0 {
		opts.Ratio = 0.9
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Window < opts.Interval {
		opts.Window = max(10*time.Second, opts.Interval)
	}
	if opts.ExitAfter == 0 {
		opts.ExitAfter = 30 * time.Second
	}
	if opts.Read == nil {
		opts.Read = new(Reader).Read
	}
	if opts.SetLimit == nil {
		opts.SetLimit = setMemoryLimit
	}
	if opts.Collect == nil {
		opts.Collect = runtime.GC
	}
	return &Guard{opts: opts, synced: make(chan chan error)}, nil
}

// Start reads a first Sample and sets the Go memory limit from it; it
// returns the State, for the caller to log.
func (g *Guard) Start() (State, error) {
	s, err := g.opts.Read()
	if err != nil {
		return State{}, err
	}
	g.window = append(g.window[:0], s)
	g.reserve(s.outside())
	g.state.LiveHeapBytes, g.state.Room = s.LiveHeapBytes, 1
	return g.state, nil
}

// Run reads a Sample every Interval until ctx ends (then it returns nil)
// or the process has been GC-bound for ExitAfter (then an error wrapping
// ErrGCBound). Call Start first.
func (g *Guard) Run(ctx context.Context) error {
	tick := time.NewTicker(g.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case reply := <-g.synced:
			g.sawSync = true
			reply <- g.atSync()
			continue
		case <-tick.C:
		}
		s, err := g.opts.Read()
		if err != nil {
			if g.opts.ReadError != nil {
				g.opts.ReadError(err)
			}
			continue
		}
		if err := g.observe(s); err != nil {
			return err
		}
	}
}

// Synced judges, once the cache has synced, whether what the operator
// holds fits the limit with room to collect it: what it caches stays in
// the heap from then on, and with under a quarter of GOGC's room past it
// the operator would crawl through all its work, each collection
// beginning soon after the last ends. It returns an error wrapping
// ErrGCBound that says how large a limit would fit if not; nil if it
// fits, if the Guard sets no limit or may not fail (ExitAfter negative),
// or if ctx ends first. Run, which must be running, takes the reading,
// collecting first when the limit holds the heap goal down, so that the
// live heap it judges is what the cache holds, not the garbage of its
// lists. Safe to call from any goroutine; nil-safe.
func (g *Guard) Synced(ctx context.Context) error {
	if g == nil {
		return nil
	}
	reply := make(chan error, 1)
	select {
	case g.synced <- reply:
	case <-ctx.Done():
		return nil
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return nil
	}
}

// atSync is Synced's reading, on Run's goroutine.
func (g *Guard) atSync() error {
	if g.opts.ExitAfter <= 0 || g.state.LimitBytes == 0 {
		return nil
	}
	s, err := g.opts.Read()
	if err == nil && s.room() < 1 {
		g.opts.Collect()
		s, err = g.opts.Read()
	}
	if err != nil {
		if g.opts.ReadError != nil {
			g.opts.ReadError(err)
		}
		return nil
	}
	room := s.room()
	if s.LiveHeapBytes < g.state.LimitBytes && room >= tightRoom {
		return nil
	}
	g.state.LiveHeapBytes, g.state.Room = s.LiveHeapBytes, room
	g.beyondHeap = max(0, g.state.LimitBytes-s.HeapGoalBytes)
	return fmt.Errorf("%w: once the cache synced, the operator held %s live of the %s Go memory limit, "+
		"leaving the collector %.0f%% of the room past it that GOGC gives (the container's %s, less %s for the binary's resident pages, times %v): "+
		"each collection would begin soon after the last ended, and the operator would crawl through its work; %s",
		ErrGCBound, MiB(s.LiveHeapBytes), MiB(g.state.LimitBytes), room*100,
		MiB(g.opts.CgroupBytes), MiB(g.state.ReservedBytes), g.opts.Ratio, g.advice())
}

// observe takes one Sample.
func (g *Guard) observe(s Sample) error {
	now := time.Now()
	g.window = append(g.window, s)
	if keep := int(g.opts.Window/g.opts.Interval) + 1; len(g.window) > keep {
		g.window = append(g.window[:0], g.window[len(g.window)-keep:]...)
	}
	g.reserve(s.outside())
	first := g.window[0]
	st := &g.state
	st.LiveHeapBytes = s.LiveHeapBytes
	span := g.opts.Interval * time.Duration(len(g.window)-1)
	gc, used := s.GCSeconds-first.GCSeconds, s.UsedSeconds-first.UsedSeconds
	st.GCShare, st.GCCores = 0, gc/span.Seconds()
	if used > 0 {
		st.GCShare = min(1, gc/used)
	}
	heap := 0.0
	st.Room = 1
	if st.LimitBytes > 0 {
		heap = float64(st.LiveHeapBytes) / float64(st.LimitBytes)
		st.Room = s.room()
		if st.Room < 1 {
			g.beyondHeap = max(0, st.LimitBytes-s.HeapGoalBytes)
		}
	}
	was := st.Pressure
	switch {
	case (st.GCShare >= pressureShare && st.GCCores >= pressureCores) || heap >= pressureHeap || st.Room < pressureRoom:
		st.Pressure = true
	case (st.GCShare < calmShare || st.GCCores < pressureCores) && heap < calmHeap && st.Room >= calmRoom:
		st.Pressure = false
	}
	// The collector spins when it takes most of the CPU, when the limit
	// leaves it little room past the live heap (each collection then
	// starts soon after the last ends), or when the runtime's limiter had
	// to hold it to half the CPU.
	limited := s.LimiterCycle > first.LimiterCycle
	tight := st.LimitBytes > 0 && (st.LiveHeapBytes >= st.LimitBytes || st.Room < tightRoom)
	if st.GCCores >= boundCores && (st.GCShare >= boundShare || heap >= boundHeap || tight || limited) {
		if g.boundAt.IsZero() {
			g.boundAt = now.Add(-span)
		}
		st.GCBoundFor = now.Sub(g.boundAt)
	} else {
		g.boundAt, st.GCBoundFor = time.Time{}, 0
	}
	if g.opts.Observe != nil {
		g.opts.Observe(*st)
	}
	if st.Pressure != was && g.opts.Pressure != nil {
		g.opts.Pressure(*st)
	}
	// A live heap over the limit is out of room whatever the collector's
	// CPU: the runtime then holds more than the limit, and the kernel
	// takes it from the binary's pages, so the process waits on faults
	// more than it collects.
	over := st.LimitBytes > 0 && st.LiveHeapBytes >= st.LimitBytes
	if (tight && st.GCBoundFor > 0) || over {
		if g.tightAt.IsZero() {
			g.tightAt = now.Add(-g.opts.Interval) // the collections the reading saw
		}
	} else {
		g.tightAt = time.Time{}
	}
	switch {
	case g.opts.ExitAfter <= 0 || st.LimitBytes == 0:
	case st.GCBoundFor >= g.opts.ExitAfter:
		return g.boundError()
	case !g.tightAt.IsZero() && now.Sub(g.tightAt) >= min(g.opts.ExitAfter, tightExit):
		// Every collection starts soon after the last ends, and the
		// operator crawls for as long as it has work: what it holds
		// does not fit the limit with room to collect it.
		return g.boundError()
	}
	return nil
}

// room is the collector's room to work (State.Room): the heap goal past
// the live heap, over what GOGC alone would give; 1 when unknown.
func (s Sample) room() float64 {
	if s.HeapGoalBytes <= 0 || s.LiveHeapBytes <= 0 {
		return 1
	}
	gogc := float64(s.GOGC)
	if gogc <= 0 {
		gogc = 100 // off: the limit alone paces the collector; judge it against the default
	}
	return min(1, max(0, float64(s.HeapGoalBytes-s.LiveHeapBytes)/float64(s.LiveHeapBytes)/(gogc/100)))
}

// outside is what s says the cgroup holds beyond the Go runtime's
// memory: the cgroup's charge less the runtime's, where known, and never
// less than the process's own resident file pages.
func (s Sample) outside() int64 {
	return max(s.FileBytes, s.ChargedBytes-s.GoBytes)
}

// reserve keeps file bytes out of the limit if they are more than kept
// so far, and sets the limit.
func (g *Guard) reserve(file int64) {
	if file <= g.state.ReservedBytes && g.state.LimitBytes != 0 {
		return
	}
	g.state.ReservedBytes = max(file, g.state.ReservedBytes)
	if g.opts.CgroupBytes == 0 {
		return
	}
	rest := max(g.opts.CgroupBytes-g.state.ReservedBytes, int64(float64(g.opts.CgroupBytes)*minShare))
	limit := int64(float64(rest) * g.opts.Ratio)
	if limit == g.state.LimitBytes {
		return
	}
	g.state.LimitBytes = limit
	g.opts.SetLimit(limit)
}

// boundError says what happened and how large a limit would fit.
func (g *Guard) boundError() error {
	st := g.state
	return fmt.Errorf("%w: the garbage collector used %.0f%% of the CPU the process used (%.2f cores) for %v "+
		"with %s live of the %s Go memory limit and %.0f%% of its room to collect in "+
		"(the container's %s, less %s for the binary's resident pages, times %v): the operator holds more than fits; %s",
		ErrGCBound, st.GCShare*100, st.GCCores, st.GCBoundFor.Round(time.Second),
		MiB(st.LiveHeapBytes), MiB(st.LimitBytes), st.Room*100, MiB(g.opts.CgroupBytes), MiB(st.ReservedBytes), g.opts.Ratio, g.advice())
}

// advice says how large a limit would fit: the live heap with half of
// GOGC's room to collect in, plus what the runtime holds beyond the heap
// (the limit less the heap goal, when the limit set the goal), over the
// ratio, plus the reserve.
func (g *Guard) advice() string {
	st := g.state
	need := int64((float64(st.LiveHeapBytes)*1.5+float64(g.beyondHeap))/g.opts.Ratio) + st.ReservedBytes
	more := ""
	if !g.sawSync {
		more = " (more: the cache had not synced, and holds more once it has)"
	}
	return fmt.Sprintf("raise the container's memory limit to at least %s%s "+
		"or cache less (docs/performance.md, \"When a cluster outgrows the cache\")", MiB(need), more)
}

// MiB formats bytes in MiB, rounded up.
func MiB(b int64) string { return fmt.Sprintf("%d MiB", (b+1<<20-1)>>20) }
