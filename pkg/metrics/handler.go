package metrics

import "github.com/prometheus/client_golang/prometheus"

// HandlerPanics counts the panics a controller's sources recovered from its
// handlers, map functions and predicates, labelled by controller and by the
// type the source watches ("v1/ConfigMap"). controller-runtime has no such
// series: a panic there ends the process.
const HandlerPanics = "opkit_controller_handler_panics_total"

// NewHandlerPanics creates the HandlerPanics counter and registers it with
// reg. Called again with the same registry, it returns the counter
// registered first.
func NewHandlerPanics(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: HandlerPanics,
		Help: "Total number of panics recovered from event handlers, map functions and predicates per controller and type",
	}, []string{"controller", "type"})
	c, err := register(reg, c)
	if err != nil {
		return nil, joinErrs("handler", []error{err})
	}
	return c, nil
}
