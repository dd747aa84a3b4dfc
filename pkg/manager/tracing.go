package manager

import (
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// traceRequests instruments the manager's REST config, and so every client
// built from it, with tracing.Transport when Options.TracerProvider is set:
// a request made with a reconcile's context becomes a child span of the
// reconcile's span. The informers' lists and watches carry no span and
// pass through.
func (m *Manager) traceRequests() {
	if m.opts.TracerProvider != nil {
		m.config.Wrap(tracing.Transport(m.opts.TracerProvider))
	}
}

// traceReconciles gives a controller the manager's TracerProvider unless
// its options name one.
func (m *Manager) traceReconciles(opts *controller.Options[reconcile.Request]) {
	if opts.TracerProvider == nil {
		opts.TracerProvider = m.opts.TracerProvider
	}
}
