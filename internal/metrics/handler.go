package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// NewHandlerPanics creates the HandlerPanics counter and registers it with
// reg. Called again with the same registry, it returns the counter
// registered first.
func NewHandlerPanics(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: HandlerPanics,
		Help: "Total number of panics recovered from event handlers, map functions and predicates per controller and type",
	}, []string{"controller", "type"})
	c, err := promreg.Register(reg, c)
	if err != nil {
		return nil, promreg.Join("handler", []error{err})
	}
	return c, nil
}
