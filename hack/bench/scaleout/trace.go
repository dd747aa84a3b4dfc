package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tracePath is where the replica logging to logPath writes its trace
// (-trace): one line per reconcile, its start in Unix nanoseconds, its
// duration in nanoseconds and its key.
func tracePath(logPath string) string { return logPath + ".trace" }

// traced is one reconcile of a trace.
type traced struct {
	start time.Time
	took  time.Duration
}

// readTrace returns the reconciles of the trace at path that began in
// [from, to) and took at least least, in the order they began.
func readTrace(path string, from, to time.Time, least time.Duration) ([]traced, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []traced
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			// A replica killed mid-write leaves a short last line.
			continue
		}
		ns, err1 := strconv.ParseInt(fields[0], 10, 64)
		d, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: line %q: want start and duration in nanoseconds, then the key", path, sc.Text())
		}
		t := traced{start: time.Unix(0, ns), took: time.Duration(d)}
		if !t.start.Before(from) && t.start.Before(to) && t.took >= least {
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b traced) int { return a.start.Compare(b.start) })
	return out, nil
}

// earlyLate returns the median duration, in milliseconds, of the first
// fifth of rs (in the order they began) and of the last fifth: how much
// the machine's load, which falls as replicas finish their part, changes
// what a reconcile costs over a burst. Both are 0 for fewer than five.
func earlyLate(rs []traced) (early, late float64) {
	n := len(rs) / 5
	if n == 0 {
		return 0, 0
	}
	millis := func(part []traced) float64 {
		ms := make([]float64, len(part))
		for i, r := range part {
			ms[i] = float64(r.took) / float64(time.Millisecond)
		}
		return median(ms)
	}
	return millis(rs[:n]), millis(rs[len(rs)-n:])
}
