package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers c with reg and returns it, or the collector already
// registered under the same description: several queues and controllers
// built on one registry share one set of collectors, told apart by their
// labels.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, err
}

// share registers *c with reg, or replaces *c by the collector registered
// already under its description, and appends any error to errs.
func share[C prometheus.Collector](reg prometheus.Registerer, errs *[]error, c *C) {
	got, err := register(reg, *c)
	if err != nil {
		*errs = append(*errs, err)
		return
	}
	*c = got
}

// joinErrs wraps the registration errors of the metrics of what, if any.
func joinErrs(what string, errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register %s metrics: %w", what, err)
	}
	return nil
}
