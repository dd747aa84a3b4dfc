package metrics

import "github.com/prometheus/client_golang/prometheus"

// ClientWrites counts the applies and patches of a controller's writing
// client (manager.Manager.Writer), labelled by controller, verb ("apply"
// or "patch") and result: "sent" to the API server, or "skipped" because
// it would have changed nothing. controller-runtime has no such series.
const ClientWrites = "opkit_client_writes_total"

// The values of ClientWrites' labels.
const (
	VerbApply    = "apply"
	VerbPatch    = "patch"
	WriteSent    = "sent"
	WriteSkipped = "skipped"
)

// NewClientWrites creates the ClientWrites counter and registers it with
// reg. Called again with the same registry, it returns the counter
// registered first, so every controller of a manager may call it.
func NewClientWrites(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ClientWrites,
		Help: "Total number of applies and patches per controller, verb and result (sent, or skipped as changing nothing)",
	}, []string{"controller", "verb", "result"})
	c, err := register(reg, c)
	if err != nil {
		return nil, joinErrs("client write", []error{err})
	}
	return c, nil
}
