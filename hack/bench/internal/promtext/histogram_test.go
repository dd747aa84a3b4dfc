package promtext

import (
	"math"
	"strings"
	"testing"
)

const sample = `# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="a",le="0.1"} 50
workqueue_queue_duration_seconds_bucket{name="a",le="1"} 90
workqueue_queue_duration_seconds_bucket{name="a",le="+Inf"} 100
workqueue_queue_duration_seconds_sum{name="a"} 20
workqueue_queue_duration_seconds_count{name="a"} 100
workqueue_queue_duration_seconds_bucket{name="b",le="0.1"} 1
workqueue_queue_duration_seconds_bucket{name="b",le="1"} 1
workqueue_queue_duration_seconds_bucket{name="b",le="+Inf"} 1
workqueue_queue_duration_seconds_sum{name="b"} 0
workqueue_queue_duration_seconds_count{name="b"} 1
`

// A series is picked by its labels; quantiles interpolate within their
// bucket as histogram_quantile does, over the observations since an
// earlier reading.
func TestHistogramQuantile(t *testing.T) {
	h, err := ReadHistogram(strings.NewReader(sample), "workqueue_queue_duration_seconds", map[string]string{"name": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Quantile(0.5); got != 0.1 {
		t.Errorf("p50 = %v, want 0.1", got)
	}
	if got := h.Quantile(0.7); math.Abs(got-0.55) > 1e-9 {
		t.Errorf("p70 = %v, want 0.55", got)
	}
	if got := h.Quantile(0.99); !math.IsInf(got, 1) {
		t.Errorf("p99 = %v, want +Inf (in the last bucket)", got)
	}
	if got := h.Mean(); got != 0.2 {
		t.Errorf("mean = %v, want 0.2 (sum 20 of 100)", got)
	}
	earlier := Histogram{Bounds: h.Bounds, Counts: []uint64{50, 50, 50}, Sum: 2}
	if got := h.Since(earlier).Quantile(0.5); math.Abs(got-(0.1+0.9*25.0/40)) > 1e-9 {
		t.Errorf("p50 since = %v", got)
	}
	if got := h.Since(earlier).Mean(); math.Abs(got-0.36) > 1e-9 {
		t.Errorf("mean since = %v, want 0.36 (sum 18 of 50)", got)
	}
	if _, err := ReadHistogram(strings.NewReader(sample), "workqueue_queue_duration_seconds", map[string]string{"name": "c"}); err == nil {
		t.Error("no error for a series that is not there")
	}
	if got := (Histogram{}).Mean(); !math.IsNaN(got) {
		t.Errorf("empty mean: %v, want NaN", got)
	}
	if got := (Histogram{}).Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
}
