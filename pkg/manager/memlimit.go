package manager

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/memguard"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// MemoryLimitOptions configure the Go runtime's soft memory limit
// (debug.SetMemoryLimit), which Start sets from the memory limit of the
// process's cgroup (v2 memory.max or v1 memory.limit_in_bytes, the lowest
// of the cgroup's and its ancestors', read by
// github.com/KimMachineGun/automemlimit), so that the garbage collector
// collects harder as the heap nears the container's limit instead of the
// kernel killing the container: with the default GOGC the heap may reach
// twice what is live. Start logs the limit it set.
//
// The limit is measured, not assumed: what the cgroup is charged for but
// the Go runtime does not count is kept out of it first, and the limit is
// Ratio of the rest. That is the cgroup's charge less the runtime's
// memory (the binary's pages, mapped or read ahead, about 30 to 40 MiB for
// an operator built on client-go, and the kernel's memory), and never
// less than the process's resident file pages (RssFile and RssShmem in
// /proc/self/status). The manager measures it again every two seconds
// while it runs, as more of the binary becomes resident, and lowers the
// limit to match (opkit_memory_reserved_bytes).
//
// While it runs the manager also watches the collector (see
// docs/performance.md, "Sizing the memory limit"):
//   - Memory pressure (the collector taking a quarter or more of the CPU
//     the process uses, the live heap at 90% of the limit, or the limit
//     leaving the collector under half the room past the live heap that
//     GOGC gives it, opkit_memory_gc_room_ratio) is reported
//     by opkit_memory_pressure, logged, shown by /readyz?verbose's
//     "memory" check (which does not fail), and makes the cache shed what
//     it can drop: the objects LazyListers fetched are dropped, and
//     fetched again when read, until the pressure ends.
//   - GC-bound (the collector taking a quarter of a core and half or more
//     of that CPU, or with the live heap at 95% of the limit, with under a
//     quarter of its room, or with the runtime's GC CPU limiter on, for
//     GCBoundExit without a break, or for 6s with the live heap over the
//     limit or under a quarter of the collector's room) means what the
//     operator holds does not fit: Start fails with an error wrapping
//     ErrGCBound that says how large a limit would fit, rather than leave
//     the operator crawling, each collection beginning as the last ends,
//     neither converging at its speed nor killed.
//   - Once the cache has synced, what it holds stays in the heap: if that
//     leaves the collector under a quarter of its room, Start fails with
//     ErrGCBound then, before the controllers start, saying how large a
//     limit would fit.
//
// Start sets nothing and watches nothing when the GOMEMLIMIT environment
// variable is set (the runtime took it at start), when AUTOMEMLIMIT is
// "off", or when the cgroup has no memory limit; AUTOMEMLIMIT set to a
// ratio overrides Ratio. The limit is process-wide: a main that sets it
// itself turns this off.
type MemoryLimitOptions struct {
	// Off leaves the Go memory limit as it is and does not watch the
	// collector. Defaults to false: Start sets it.
	Off bool
	// Ratio is the share given to the Go runtime of the cgroup's limit
	// less the binary's resident pages, in (0, 1]: the rest is for the
	// heap overshooting between two collections and for the kernel's
	// memory charged to the cgroup. Defaults to 0.9.
	Ratio float64
	// GCBoundExit is how long the collector may take most of the CPU
	// before Start fails with ErrGCBound (6s, if shorter, when the limit
	// leaves it under a quarter of its room). Defaults to 30s; negative:
	// never.
	GCBoundExit time.Duration
}

// ErrGCBound is wrapped by the error Start returns when the garbage
// collector took most of the CPU for MemoryLimitOptions.GCBoundExit: the
// container's memory limit is too small for what the operator caches.
var ErrGCBound = memguard.ErrGCBound

const (
	defaultMemoryLimitRatio = 0.9
	defaultGCBoundExit      = 30 * time.Second
)

func (o MemoryLimitOptions) withDefaults() MemoryLimitOptions {
	if o.Ratio == 0 {
		o.Ratio = defaultMemoryLimitRatio
	}
	if o.GCBoundExit == 0 {
		o.GCBoundExit = defaultGCBoundExit
	}
	return o
}

func (o MemoryLimitOptions) validate() error {
	if math.IsNaN(o.Ratio) || o.Ratio < 0 || o.Ratio > 1 {
		return fmt.Errorf("Options.MemoryLimit.Ratio is %v: it must be 0 (the default, %v) or in (0, 1]", o.Ratio, defaultMemoryLimitRatio)
	}
	return nil
}

// memoryState is what the manager shows of its memory guard.
type memoryState struct {
	metrics  *imetrics.Memory
	pressure atomic.Pointer[memguard.State] // the last reading under pressure; nil when none
	limit    atomic.Pointer[memguard.State] // the last reading; nil without a guard
}

// setMemoryLimit sets the Go memory limit as Options.MemoryLimit says, and
// logs what it did; it returns the guard to run (one that only watches
// when the limit is not the manager's to set), or nil when Off. A cgroup
// it cannot read is logged, not fatal: the operator runs as it would
// have without.
func (m *Manager) setMemoryLimit() *memguard.Guard {
	o := m.opts.MemoryLimit
	if o.Off {
		return nil
	}
	cgroup, ratio := m.containerLimit(o.Ratio)
	g, err := m.newGuard(cgroup, ratio, o.GCBoundExit)
	if err == nil {
		var st memguard.State
		if st, err = g.Start(); err == nil {
			if cgroup > 0 {
				m.log.Info("Go memory limit set from the container's", "bytes", st.LimitBytes, "cgroupBytes", cgroup,
					"reservedBytes", st.ReservedBytes, "ratio", ratio)
			}
			m.memory.observe(st)
			return g
		}
	}
	m.log.Error(err, "Cannot read the process's memory; the Go memory limit is left as it is", "cgroupBytes", cgroup)
	return nil
}

// containerLimit returns the cgroup's memory limit, if the manager is to
// set the Go limit from it, and the ratio to use (AUTOMEMLIMIT's, if set);
// 0 if not, saying why in the log.
func (m *Manager) containerLimit(ratio float64) (int64, float64) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		m.log.Info("Go memory limit set by GOMEMLIMIT", "GOMEMLIMIT", v, "bytes", debug.SetMemoryLimit(-1))
		return 0, ratio
	}
	switch v := os.Getenv("AUTOMEMLIMIT"); v {
	case "":
	case "off":
		m.log.Info("Go memory limit left as it is: AUTOMEMLIMIT is off", "bytes", debug.SetMemoryLimit(-1))
		return 0, ratio
	default:
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 1 {
			m.log.Error(fmt.Errorf("AUTOMEMLIMIT is %q: set it to a ratio in (0, 1] or to off", v), "Ignoring AUTOMEMLIMIT", "ratio", ratio)
			break
		}
		ratio = r
	}
	cgroup, err := memlimit.FromCgroup()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit) || cgroup > math.MaxInt64:
		return 0, ratio
	case err != nil:
		m.log.Error(err, "Cannot read the container's memory limit; the Go memory limit is left as it is")
		return 0, ratio
	}
	return int64(cgroup), ratio
}

func (m *Manager) newGuard(cgroup int64, ratio float64, exit time.Duration) (*memguard.Guard, error) {
	log := m.log.WithName("memory")
	return memguard.New(memguard.Options{
		CgroupBytes: cgroup,
		Ratio:       ratio,
		ExitAfter:   exit,
		Observe:     m.memory.observe,
		Pressure: func(st memguard.State) {
			m.memory.setPressure(st)
			cache.Internal(m.cache, cacheaccess.Key{}).ShedMemory(st.Pressure)
			kv := []any{"gcShare", st.GCShare, "liveHeapBytes", st.LiveHeapBytes, "limitBytes", st.LimitBytes}
			if st.Pressure {
				log.Info("Memory pressure: the cache drops the objects LazyListers fetched until it ends; "+
					"see docs/performance.md, \"Sizing the memory limit\"", kv...)
			} else {
				log.Info("Memory pressure ended", kv...)
			}
		},
		ReadError: func(err error) { log.V(1).Info("Cannot read the process's memory", "error", err.Error()) },
	})
}

// runGuard runs g, if not nil, until ctx ends, failing the run if the
// process is GC-bound; it returns the stopFunc that waits for it.
func runGuard(ctx context.Context, g *memguard.Guard, fail func(error)) stopFunc {
	if g == nil {
		return noStop
	}
	ctx, cancel := context.WithCancel(ctx)
	return goStop(cancel, "memory guard", func() {
		if err := g.Run(ctx); err != nil {
			fail(fmt.Errorf("manager: %w", err))
		}
	})
}

func (s *memoryState) observe(st memguard.State) {
	s.limit.Store(&st)
	s.metrics.Reserved.Set(float64(st.ReservedBytes))
	s.metrics.GCShare.Set(st.GCShare)
	s.metrics.LiveHeap.Set(float64(st.LiveHeapBytes))
	s.metrics.GCRoom.Set(st.Room)
}

func (s *memoryState) setPressure(st memguard.State) {
	if st.Pressure {
		s.pressure.Store(&st)
		s.metrics.Pressure.Set(1)
		return
	}
	s.pressure.Store(nil)
	s.metrics.Pressure.Set(0)
}

// ready is /readyz's "memory" check: it never fails (an operator under
// memory pressure still works), and says what the guard found.
func (s *memoryState) ready(*http.Request) (string, error) {
	if p := s.pressure.Load(); p != nil {
		return fmt.Sprintf("MemoryPressure: the collector used %.0f%% of the CPU, %s live of the %s Go memory limit; shedding fetched objects",
			p.GCShare*100, memguard.MiB(p.LiveHeapBytes), memguard.MiB(p.LimitBytes)), nil
	}
	l := s.limit.Load()
	switch {
	case l == nil:
		return "not watched (MemoryLimitOptions.Off)", nil
	case l.LimitBytes == 0:
		return fmt.Sprintf("%s live; no container memory limit set the Go limit", memguard.MiB(l.LiveHeapBytes)), nil
	}
	return fmt.Sprintf("%s live of the %s Go memory limit (%s kept for the binary's resident pages)",
		memguard.MiB(l.LiveHeapBytes), memguard.MiB(l.LimitBytes), memguard.MiB(l.ReservedBytes)), nil
}
