package budget

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// Metrics are a Budget's series. A nil *Metrics records nothing.
type Metrics struct {
	tokens      *prometheus.CounterVec
	wait        *prometheus.HistogramVec
	canceledVec *prometheus.CounterVec
	pushbackVec *prometheus.CounterVec

	reg        prometheus.Registerer
	collectors []prometheus.Collector // registered with reg
}

// MetricNames name a Budget's metrics (Options.MetricNames).
type MetricNames struct {
	Tokens, Wait, Canceled, Pushbacks, Rate, ConfiguredRate, Concurrency string
}

// ManagerMetricNames are the manager's budget's metrics' names, and the
// default: opkit_api_budget_*.
var ManagerMetricNames = MetricNames{
	Tokens: imetrics.APIBudgetTokens, Wait: imetrics.APIBudgetWait, Canceled: imetrics.APIBudgetCanceled,
	Pushbacks: imetrics.APIBudgetPushbacks, Rate: imetrics.APIBudgetRate, ConfiguredRate: imetrics.APIBudgetConfiguredRate,
	Concurrency: imetrics.APIBudgetConcurrency,
}

// MemberMetricNames are a fleet member cluster's budget's metrics' names:
// opkit_fleet_member_api_budget_*, since a series of the same name as the
// manager's could not carry the member's label in the same registry.
var MemberMetricNames = MetricNames{
	Tokens: imetrics.MemberAPIBudgetTokens, Wait: imetrics.MemberAPIBudgetWait, Canceled: imetrics.MemberAPIBudgetCanceled,
	Pushbacks: imetrics.MemberAPIBudgetPushbacks, Rate: imetrics.MemberAPIBudgetRate, ConfiguredRate: imetrics.MemberAPIBudgetConfiguredRate,
	Concurrency: imetrics.MemberAPIBudgetConcurrency,
}

// waitBuckets span a token's wait: a millisecond to a minute.
var waitBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// newMetrics registers b's metrics with reg; the series of the lanes other
// than the reconcile lane start at zero, and the rates are read from b at
// each scrape.
func newMetrics(reg prometheus.Registerer, names MetricNames, b *Budget) (*Metrics, error) {
	labels := []string{"lane", "controller"}
	m := &Metrics{reg: reg,
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: names.Tokens,
			Help: "Requests to the API server let through by the API budget, by lane and controller."}, labels),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: names.Wait,
			Help: "Seconds a request waited for a token of the API budget, by lane and controller.", Buckets: waitBuckets}, labels),
		canceledVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: names.Canceled,
			Help: "Requests whose context ended while they waited for a token, by lane and controller."}, labels),
		pushbackVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: names.Pushbacks,
			Help: "Signals of the API server's load, each of which may lower the API budget's rate, by lane, controller and reason: " +
				"responses with status 429 (429) or another status with a Retry-After header (retry_after), " +
				"and the requests of the last two seconds answered slowly (latency)."}, append(labels, "reason")),
	}
	rate := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: names.Rate,
		Help: "The API budget's rate in force, in requests a second; +Inf while none applies."}, b.Rate)
	configured := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: names.ConfiguredRate,
		Help: "The API budget's configured rate, in requests a second; +Inf for none."}, b.configured)
	concurrency := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: names.Concurrency,
		Help: "The API budget's limit on requests in flight, which 429s of the API server's priority and fairness narrow; +Inf while none applies."}, b.Concurrency)
	for _, c := range []prometheus.Collector{m.tokens, m.wait, m.canceledVec, m.pushbackVec, rate, configured, concurrency} {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, err
		}
		m.collectors = append(m.collectors, c)
	}
	for l := range numLanes {
		if l != LaneReconcile {
			m.start(l, "")
		}
	}
	m.start(LaneReconcile, Unattributed)
	return m, nil
}

// unregister unregisters the collectors registered.
func (m *Metrics) unregister() {
	if m == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
	m.collectors = nil
}

// start makes the series of lane and controller, at zero.
func (m *Metrics) start(lane Lane, controller string) {
	if m == nil {
		return
	}
	m.tokens.WithLabelValues(lane.String(), controller)
	m.wait.WithLabelValues(lane.String(), controller)
	m.canceledVec.WithLabelValues(lane.String(), controller)
	for _, r := range reasons {
		m.pushbackVec.WithLabelValues(lane.String(), controller, string(r))
	}
}

// forget deletes a controller's series.
func (m *Metrics) forget(controller string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"controller": controller}
	m.tokens.DeletePartialMatch(l)
	m.wait.DeletePartialMatch(l)
	m.canceledVec.DeletePartialMatch(l)
	m.pushbackVec.DeletePartialMatch(l)
}

func (m *Metrics) granted(lane Lane, controller string, waited time.Duration) {
	if m == nil {
		return
	}
	m.tokens.WithLabelValues(lane.String(), controller).Inc()
	m.waited(lane, controller, waited)
}

// waited observes a wait for a token, if there was one; a pre-paid token
// is counted when a request spends it.
func (m *Metrics) waited(lane Lane, controller string, waited time.Duration) {
	if m == nil || waited <= 0 {
		return
	}
	m.wait.WithLabelValues(lane.String(), controller).Observe(waited.Seconds())
}

func (m *Metrics) canceled(lane Lane, controller string, waited time.Duration) {
	if m == nil {
		return
	}
	m.canceledVec.WithLabelValues(lane.String(), controller).Inc()
	m.wait.WithLabelValues(lane.String(), controller).Observe(waited.Seconds())
}

func (m *Metrics) pushedBack(lane Lane, controller string, reason Reason) {
	if m == nil {
		return
	}
	m.pushbackVec.WithLabelValues(lane.String(), controller, string(reason)).Inc()
}
