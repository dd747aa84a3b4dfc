package autoscale

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Load is one replica's load over its last window, as it publishes it in
// its membership Lease (membership.AnnotationReport).
type Load struct {
	// QueueP99 is the 99th percentile of the time keys of its sharded
	// controllers waited in their queues until a worker took them.
	QueueP99 time.Duration
	// ReconcileMean is the mean time a reconcile of theirs took.
	ReconcileMean time.Duration
	// Busy is the share of its workers' time spent reconciling, 0 to 1.
	Busy float64
	// Depth is the keys waiting in their queues at the window's end.
	Depth int
}

// String writes l compactly, as Lease annotations should be:
// "q=0.512 r=0.05 b=0.93 d=12", or "q=1.2e-05" for a p99 of 12µs: the
// times in seconds to four significant digits, so that a p99 compares
// with an objective of any size as it was measured (to the millisecond,
// a p99 of 1.4ms read as 1ms, within an objective of 1ms, and every wait
// under 0.5ms as none).
func (l Load) String() string {
	return fmt.Sprintf("q=%.4g r=%.4g b=%.2f d=%d", l.QueueP99.Seconds(), l.ReconcileMean.Seconds(), l.Busy, l.Depth)
}

// ParseLoad reads what Load.String wrote. Unknown fields are ignored, so
// that a newer replica may publish more.
func ParseLoad(s string) (Load, error) {
	var l Load
	if s == "" {
		return l, fmt.Errorf("parse load: empty")
	}
	for f := range strings.FieldsSeq(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return l, fmt.Errorf("parse load %q: field %q is not key=value", s, f)
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || math.IsInf(n, 0) {
			return l, fmt.Errorf("parse load %q: field %q: want a non-negative number", s, f)
		}
		switch k {
		case "q":
			l.QueueP99 = seconds(n)
		case "r":
			l.ReconcileMean = seconds(n)
		case "b":
			l.Busy = n
		case "d":
			l.Depth = int(n)
		}
	}
	return l, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
