package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// NewClientWrites creates the ClientWrites counter and registers it with
// reg. Called again with the same registry, it returns the counter
// registered first, so every controller of a manager may call it.
func NewClientWrites(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ClientWrites,
		Help: "Total number of applies and patches per controller, verb and result (sent, or skipped as changing nothing)",
	}, []string{"controller", "verb", "result"})
	c, err := promreg.Register(reg, c)
	if err != nil {
		return nil, promreg.Join("client write", []error{err})
	}
	return c, nil
}
