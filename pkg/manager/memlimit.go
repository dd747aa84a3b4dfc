package manager

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
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
// Start sets nothing when the GOMEMLIMIT environment variable is set (the
// runtime took it at start), when AUTOMEMLIMIT is "off", or when the
// cgroup has no memory limit; AUTOMEMLIMIT set to a ratio overrides Ratio.
// The limit is process-wide: a main that sets it itself turns this off.
type MemoryLimitOptions struct {
	// Off leaves the Go memory limit as it is. Defaults to false: Start
	// sets it.
	Off bool
	// Ratio is the share of the cgroup's limit given to the Go runtime,
	// in (0, 1]: the rest is for what the runtime does not count (the
	// binary's mapped pages, C memory) and for the heap overshooting
	// between two collections. Defaults to 0.9.
	Ratio float64
}

const defaultMemoryLimitRatio = 0.9

func (o MemoryLimitOptions) withDefaults() MemoryLimitOptions {
	if o.Ratio == 0 {
		o.Ratio = defaultMemoryLimitRatio
	}
	return o
}

func (o MemoryLimitOptions) validate() error {
	if math.IsNaN(o.Ratio) || o.Ratio < 0 || o.Ratio > 1 {
		return fmt.Errorf("Options.MemoryLimit.Ratio is %v: it must be 0 (the default, %v) or in (0, 1]", o.Ratio, defaultMemoryLimitRatio)
	}
	return nil
}

// setMemoryLimit sets the Go memory limit as Options.MemoryLimit says, and
// logs what it did. A cgroup it cannot read is logged, not fatal: the
// operator runs as it would have without.
func (m *Manager) setMemoryLimit() {
	o := m.opts.MemoryLimit
	if o.Off {
		return
	}
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		m.log.Info("Go memory limit set by GOMEMLIMIT", "GOMEMLIMIT", v, "bytes", debug.SetMemoryLimit(-1))
		return
	}
	if os.Getenv("AUTOMEMLIMIT") == "off" {
		m.log.Info("Go memory limit left as it is: AUTOMEMLIMIT is off", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	cgroup, err := memlimit.FromCgroup()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit):
		return
	case err != nil:
		m.log.Error(err, "Cannot read the container's memory limit; the Go memory limit is left as it is")
		return
	}
	// Set applies AUTOMEMLIMIT, a ratio, over Ratio.
	limit, err := memlimit.Set(memlimit.WithProvider(memlimit.Limit(cgroup)), memlimit.WithRatio(o.Ratio))
	if err != nil {
		m.log.Error(err, "Cannot set the Go memory limit", "cgroupBytes", cgroup)
		return
	}
	m.log.Info("Go memory limit set from the container's", "bytes", limit, "cgroupBytes", cgroup)
}
