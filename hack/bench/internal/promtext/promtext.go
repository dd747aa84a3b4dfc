// Package promtext reads single values from the Prometheus text format
// that the benchmarks' processes serve on /metrics.
package promtext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrNoMetric is returned by Gauge for a metric the text does not export
// without labels.
var ErrNoMetric = errors.New("metric not exported")

// Gauge returns the value of the unlabelled metric name.
func Gauge(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("metric %s: %w", name, err)
			}
			return f, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: %w", name, ErrNoMetric)
}
