// Package promreg registers Prometheus collectors so that everything built
// on one registry shares them: several queues and controllers of a manager
// call the same constructors and get one set of collectors, told apart by
// their labels.
//
//   - Register and Share never panic: a collector of the same description
//     and another type is an error, returned.
//   - Nothing registers into a global registry: every call takes the
//     prometheus.Registerer to use.
package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or the collector already
// registered under the same description.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
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

// Share registers *c with reg, or replaces *c by the collector registered
// already under its description, and appends any error to errs.
func Share[C prometheus.Collector](reg prometheus.Registerer, errs *[]error, c *C) {
	got, err := Register(reg, *c)
	if err != nil {
		*errs = append(*errs, err)
		return
	}
	*c = got
}

// Join wraps the registration errors of the metrics of what, if any.
func Join(what string, errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register %s metrics: %w", what, err)
	}
	return nil
}
