package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// The manager's memory metrics (manager.MemoryLimitOptions), served
// always, and measured unless MemoryLimitOptions.Off.
const (
	// MemoryPressure is 1 while memory runs short: the collector takes a
	// large share of the CPU, or the live heap nears the Go memory limit.
	MemoryPressure = "opkit_memory_pressure"
	// MemoryReserved is what the Go memory limit keeps out of the
	// container's for the binary's resident pages, as measured.
	MemoryReserved = "opkit_memory_reserved_bytes"
	// MemoryGCShare is the collector's share of the CPU the process used
	// over the last ten seconds.
	MemoryGCShare = "opkit_memory_gc_cpu_ratio"
	// MemoryLiveHeap is the heap the last collection found live.
	MemoryLiveHeap = "opkit_memory_live_heap_bytes"
	// MemoryGCRoom is the collector's room to work under the Go memory
	// limit, as a share of what GOGC alone gives it.
	MemoryGCRoom = "opkit_memory_gc_room_ratio"
)

// Memory is the manager's memory gauges.
type Memory struct {
	Pressure, Reserved, GCShare, LiveHeap, GCRoom prometheus.Gauge
}

// NewMemory registers the memory gauges in reg.
func NewMemory(reg prometheus.Registerer) (*Memory, error) {
	m := &Memory{
		Pressure: prometheus.NewGauge(prometheus.GaugeOpts{Name: MemoryPressure,
			Help: "1 while memory runs short (the collector takes a quarter or more of the CPU, the live heap is at 90% of the Go memory limit, or the limit leaves the collector under half its room), else 0"}),
		Reserved: prometheus.NewGauge(prometheus.GaugeOpts{Name: MemoryReserved,
			Help: "Bytes of the container's memory limit kept out of the Go memory limit for the binary's resident pages, as measured"}),
		GCShare: prometheus.NewGauge(prometheus.GaugeOpts{Name: MemoryGCShare,
			Help: "The garbage collector's share of the CPU the process used over the last ten seconds"}),
		LiveHeap: prometheus.NewGauge(prometheus.GaugeOpts{Name: MemoryLiveHeap,
			Help: "Bytes of heap the last garbage collection found live"}),
		GCRoom: prometheus.NewGauge(prometheus.GaugeOpts{Name: MemoryGCRoom,
			Help: "How far the heap may grow past the live heap before the next collection, as a share of what GOGC alone allows: 1 when the Go memory limit leaves it all, 0 when each collection begins as the last ends"}),
	}
	var errs []error
	for _, g := range []*prometheus.Gauge{&m.Pressure, &m.Reserved, &m.GCShare, &m.LiveHeap, &m.GCRoom} {
		r, err := promreg.Register(reg, *g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*g = r
	}
	if len(errs) > 0 {
		return nil, promreg.Join("memory", errs)
	}
	return m, nil
}
