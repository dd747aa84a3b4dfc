package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// NewReadYourWritesWait creates the ReadYourWritesWait histogram and
// registers it with reg. Called again with the same registry, it returns
// the histogram registered first.
func NewReadYourWritesWait(reg prometheus.Registerer) (*prometheus.HistogramVec, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    ReadYourWritesWait,
		Help:    "Length of time a reconcile waited for the cache to catch up with its key's earlier writes, per controller and result",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"controller", "result"})
	h, err := promreg.Register(reg, h)
	if err != nil {
		return nil, promreg.Join("read-your-writes", []error{err})
	}
	return h, nil
}
