package promtext

import (
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Histogram is one series of a Prometheus histogram: cumulative counts
// by upper bound, ascending, the last at +Inf.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	// Sum is the sum of the observations.
	Sum float64
}

// ReadHistogram returns the series of the histogram name whose labels
// include every pair of match.
func ReadHistogram(r io.Reader, name string, match map[string]string) (Histogram, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Histogram{}, fmt.Errorf("parse metrics: %w", err)
	}
	fam, ok := fams[name]
	if !ok {
		return Histogram{}, fmt.Errorf("%s: %w", name, ErrNoMetric)
	}
	for _, m := range fam.GetMetric() {
		if !matches(m, match) || m.GetHistogram() == nil {
			continue
		}
		h := Histogram{Sum: m.GetHistogram().GetSampleSum()}
		for _, b := range m.GetHistogram().GetBucket() {
			h.Bounds = append(h.Bounds, b.GetUpperBound())
			h.Counts = append(h.Counts, b.GetCumulativeCount())
		}
		if n := len(h.Bounds); n == 0 || !math.IsInf(h.Bounds[n-1], 1) {
			h.Bounds = append(h.Bounds, math.Inf(1))
			h.Counts = append(h.Counts, m.GetHistogram().GetSampleCount())
		}
		return h, nil
	}
	return Histogram{}, fmt.Errorf("%s%v: %w", name, match, ErrNoMetric)
}

func matches(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// Since returns h's observations since earlier, a reading of the same
// series.
func (h Histogram) Since(earlier Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts)), Sum: h.Sum - earlier.Sum}
	for i, c := range h.Counts {
		if i < len(earlier.Counts) && earlier.Counts[i] <= c {
			c -= earlier.Counts[i]
		}
		out.Counts[i] = c
	}
	return out
}

// Mean returns the mean observation, NaN for none.
func (h Histogram) Mean() float64 {
	if h.Count() == 0 {
		return math.NaN()
	}
	return h.Sum / float64(h.Count())
}

// Count returns the number of observations.
func (h Histogram) Count() uint64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Quantile returns the q-quantile, interpolated linearly within its
// bucket as PromQL's histogram_quantile does; +Inf when it falls in the
// last bucket, NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	i := sort.Search(len(h.Counts), func(i int) bool { return float64(h.Counts[i]) >= rank })
	if i >= len(h.Bounds)-1 {
		return math.Inf(1)
	}
	lo, below := 0.0, uint64(0)
	if i > 0 {
		lo, below = h.Bounds[i-1], h.Counts[i-1]
	}
	in := h.Counts[i] - below
	if in == 0 {
		return h.Bounds[i]
	}
	return lo + (h.Bounds[i]-lo)*(rank-float64(below))/float64(in)
}

// Value returns the value of the gauge or counter name whose labels
// include every pair of match.
func Value(r io.Reader, name string, match map[string]string) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("parse metrics: %w", err)
	}
	for _, m := range fams[name].GetMetric() {
		if !matches(m, match) {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), nil
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("%s%v: %w", name, match, ErrNoMetric)
}
