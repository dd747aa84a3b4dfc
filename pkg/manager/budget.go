package manager

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/opkit-dev/opkit/internal/budget"
)

// APIBudgetOptions configure the manager's API budget: one token rate
// shared by every request of the clients the manager makes (the writers,
// the cached and uncached clients, the clientset, the event recorder, the
// cache's lists and watches, the webhook and metrics servers' reviews, and
// any client built from Config), served by lane in priority order: lease
// renewals (never held up), then reviews, then reconciles (shared by
// controller weight: see APIWeight), then informers; the requests of
// health and readiness checks are never held up either (AddHealthCheck). A 429 or a
// Retry-After from the API server halves the rate, as does rising
// latency (most requests answered in over a second, and in over four
// times their kind's usual); the rate then recovers additively.
// docs/api-budget.md explains the model and its defaults.
type APIBudgetOptions struct {
	// QPS is the budget in requests a second. Defaults to the rest.Config's
	// QPS when positive (with its Burst), so that a kubeconfig's or a
	// flag's limit bounds the whole operator rather than each client;
	// otherwise to none fixed: requests never wait until the API server
	// pushes back, as with controller-runtime's QPS -1, and the budget
	// then adapts from the rate it measured.
	QPS float64
	// Burst is how many requests may go at once after a quiet spell.
	// Defaults to the rest.Config's Burst with its QPS, else to 2×QPS.
	Burst int
	// Off sends every request without the budget, each client limited by
	// the rest.Config's QPS, Burst or RateLimiter as client-go does.
	// Defaults to false.
	Off bool
}

func (o APIBudgetOptions) validate() error {
	if err := budget.CheckRate(o.QPS, o.Burst); err != nil {
		return fmt.Errorf("Options.%w", err)
	}
	return nil
}

// newBudget makes the manager's budget and puts it under m.config and
// m.leaseConfig, unless Off; it turns client-go's per-client rate limit
// of m.config off (a RateLimiter set by the caller is kept), since the
// budget replaces it.
func (m *Manager) newBudget() error {
	o := m.opts.APIBudget
	if o.Off {
		return nil
	}
	qps, burst := budget.Rate(o.QPS, o.Burst, m.config.QPS, m.config.Burst)
	b, err := budget.New(budget.Options{QPS: qps, Burst: burst, Registerer: m.registry,
		OnPushback: budget.LogPushbacks(m.log.WithName("api-budget"), "The API server pushed back; lowering the API budget")})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	m.budget = b
	m.config.QPS = -1
	m.config.Wrap(b.Transport)
	m.leaseConfig.Wrap(b.LeaseTransport)
	return nil
}

// budgeted returns ctx carrying the budget, unless off: the controllers
// started with it wait for the budget before they take keys, so that keys
// wait in their queues, by priority, rather than in workers whose requests
// wait (docs/api-budget.md).
func (m *Manager) budgeted(ctx context.Context) context.Context {
	if m.budget == nil {
		return ctx
	}
	return budget.NewContext(ctx, m.budget)
}

// informerLane returns hc, its requests in the informer lane unless their
// context names a controller (a cache's lazy read in a reconcile), for the
// cache.
func (m *Manager) informerLane(hc *http.Client) *http.Client {
	if m.budget == nil {
		return hc
	}
	c := *hc
	c.Transport = budget.DefaultLane(hc.Transport, budget.LaneInformer)
	return &c
}

// cacheHTTPClient returns the HTTP client the cache gets for hc, the
// user's Options.Cache.HTTPClient: hc as is while the budget is off;
// otherwise a copy whose requests are under the budget, over hc's
// transport (its TLS, proxy and credentials), unless they are already
// (hc built from Config), and in the informer lane (see informerLane).
func (m *Manager) cacheHTTPClient(hc *http.Client) *http.Client {
	if m.budget == nil {
		return hc
	}
	c := *hc
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if !m.budget.Holds(c.Transport) {
		c.Transport = m.budget.Transport(c.Transport)
	}
	return m.informerLane(&c)
}

// APIWeight sets the controller's weight in the reconcile lane of the
// manager's API budget: while reconciles wait for the budget, each
// controller gets a share of the tokens in proportion to its weight, so
// that one that floods cannot starve another. Defaults to 1; it must be
// positive.
func APIWeight(weight float64) ControllerOption {
	return optionFunc(func(b *builder) error {
		if !(weight > 0) || math.IsInf(weight, 1) {
			return errors.New("APIWeight: the weight must be positive")
		}
		b.weight = weight
		return nil
	})
}

// weigh gives the controller name its weight in the budget, and starts
// its series.
func (m *Manager) weigh(name string, weight float64) {
	if m.budget != nil {
		m.budget.SetWeight(name, weight)
	}
}

// unweigh forgets the controller name in the budget.
func (m *Manager) unweigh(name string) {
	if m.budget != nil {
		m.budget.Forget(name)
	}
}
