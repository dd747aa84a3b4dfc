package metrics

import "github.com/prometheus/client_golang/prometheus"

// The read-your-writes metrics of a controller (see controller.Options
// DisableReadYourWrites), labelled by controller. controller-runtime's
// experimental equivalent is
// controller_runtime_client_consistency_wait_duration_seconds.
const (
	// ReadYourWritesWait observes, for each reconcile that had to wait for
	// the cache to catch up with its key's earlier writes, the seconds it
	// waited, by result: "caught_up", "timeout" (the wait's bound passed
	// and the reconcile ran with what the cache held) or "canceled" (the
	// controller stopped). A reconcile that did not wait is not observed.
	ReadYourWritesWait = "opkit_controller_read_your_writes_wait_seconds"
)

// Values of ReadYourWritesWait's result label.
const (
	WaitCaughtUp = "caught_up"
	WaitTimeout  = "timeout"
	WaitCanceled = "canceled"
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
	h, err := register(reg, h)
	if err != nil {
		return nil, joinErrs("read-your-writes", []error{err})
	}
	return h, nil
}
