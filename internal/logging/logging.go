// Package logging holds the one rule opkit follows for a logger the user
// did not set: log through klog, as client-go does, rather than discard.
//
// A user who forgets Options.Logger must still see "Reconcile failed" and
// "Cannot reach the API server". klog writes to standard error by default
// and is what client-go's own messages go through, so both appear in one
// stream in one format; klog.SetLogger (or klog's flags) configures them
// together.
package logging

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// Or returns l, or klog.Background() when l has no sink: the zero
// logr.Logger, and logr.Discard() too, which is the same value (logr
// cannot tell them apart). To log nothing, pass a Logger whose sink drops
// everything, or point klog's output elsewhere.
func Or(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return klog.Background()
	}
	return l
}
