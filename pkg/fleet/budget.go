package fleet

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/budget"
)

// APIBudgetOptions configure the API budget of each member cluster: one
// budget per member, since each member is an API server of its own, with
// a capacity and pushbacks of its own (a 429 from one member slows that
// member only, never another or the hub). Every request to the member
// goes through its budget, served by lane in priority order as the
// manager's (manager.APIBudgetOptions): the fleet's probes of its
// /readyz (never held up), then SubjectAccessReviews (Requesters), then
// the requests of reconciles, by the controller whose reconcile sent
// them (with its manager.APIWeight, once the fleet runs under the
// manager), then the member cache's lists and watches. A 429 or a
// Retry-After from the member, or its rising latency, lowers the
// member's rate; a 429 of its priority and fairness narrows its window
// of requests in flight. docs/api-budget.md explains the model.
type APIBudgetOptions struct {
	// QPS is each member's budget in requests a second. Defaults to the
	// member's Config.QPS when positive (with its Burst); otherwise to
	// none fixed: requests never wait until the member's API server
	// pushes back, and its budget then adapts from the rate it measured.
	QPS float64
	// Burst is how many requests may go at once to a member after a
	// quiet spell. Defaults to the member's Config.Burst with its QPS,
	// else to 2×QPS.
	Burst int
	// Off sends every request to the members without a budget, each
	// client limited by the member's Config as client-go limits it.
	// Defaults to false.
	Off bool
}

func (o APIBudgetOptions) validate() error {
	if err := budget.CheckRate(o.QPS, o.Burst); err != nil {
		return fmt.Errorf("fleet: invalid options: %w", err)
	}
	return nil
}

// newBudget returns m's budget, its metrics not yet registered
// (registerBudget), or nil if Options.APIBudget.Off.
func (f *Fleet) newBudget(m Member) (*budget.Budget, error) {
	o := f.opts.APIBudget
	if o.Off {
		return nil, nil
	}
	qps, burst := budget.Rate(o.QPS, o.Burst, m.Config.QPS, m.Config.Burst)
	log := f.opts.Logger.WithName("api-budget").WithValues("cluster", m.Name)
	b, err := budget.New(budget.Options{QPS: qps, Burst: burst, MetricNames: budget.MemberMetricNames, Weights: f.weight,
		OnPushback: budget.LogPushbacks(log, "The member's API server pushed back; lowering its API budget")})
	if err != nil {
		return nil, fmt.Errorf("make its API budget: %w", err)
	}
	return b, nil
}

// registerBudget registers c's budget's metrics with Options.Registerer,
// labelled by the member (cluster). f.mu is held, and a member of the
// same name that c replaces has released its own.
func (f *Fleet) registerBudget(c *Cluster) error {
	if c.budget == nil || f.opts.Registerer == nil {
		return nil
	}
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"cluster": c.name}, f.opts.Registerer)
	if err := c.budget.RegisterMetrics(reg); err != nil {
		return fmt.Errorf("its API budget: %w", err)
	}
	return nil
}

// weight is a controller's weight in the members' budgets: the manager's
// (manager.APIWeight), once Start runs under the manager; 1 until then.
func (f *Fleet) weight(controller string) float64 {
	if h := f.hub.Load(); h != nil {
		return h.Weight(controller)
	}
	return 1
}

// budgeted returns rt under b, unless b is nil; a request that waited
// for b when the member was disengaged fails with ErrNotEngaged.
func budgeted(cluster string, b *budget.Budget, rt http.RoundTripper) http.RoundTripper {
	if b == nil {
		return rt
	}
	return budgetTransport{cluster: cluster, next: b.Transport(rt)}
}

type budgetTransport struct {
	cluster string
	next    http.RoundTripper
}

func (t budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if errors.Is(err, budget.ErrClosed) {
		err = fmt.Errorf("cluster %q: %w (%w)", t.cluster, ErrNotEngaged, err)
	}
	return resp, err
}

// WrappedTransport returns the transport it wraps, so that client-go can
// find the transports underneath (utilnet.CloseIdleConnectionsFor).
func (t budgetTransport) WrappedTransport() http.RoundTripper { return t.next }

// informerLane returns hc, its requests in the informer lane of the
// member's budget unless their context names a controller (a lazy read
// in a reconcile), for the member's cache.
func informerLane(b *budget.Budget, hc *http.Client) *http.Client {
	if b == nil {
		return hc
	}
	c := *hc
	c.Transport = budget.DefaultLane(hc.Transport, budget.LaneInformer)
	return &c
}
