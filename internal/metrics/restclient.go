package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opkit-dev/opkit/internal/promreg"
)

// RESTClientMetrics records the requests of the HTTP clients whose
// transports it wraps. client-go offers these metrics only through a
// process-wide hook that can be set once; a wrapped transport keeps them in
// the registry of the manager that made the client, and counts every request
// of it, watches and discovery included.
type RESTClientMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewRESTClientMetrics creates the REST client metrics and registers them
// with reg, sharing them with any registered before.
func NewRESTClientMetrics(reg prometheus.Registerer) (*RESTClientMetrics, error) {
	m := &RESTClientMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RESTClientRequests,
			Help: "Number of HTTP requests, partitioned by status code, method, and host.",
		}, []string{"code", "method", "host"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    RESTClientRequestDuration,
			Help:    "Request latency in seconds. Broken down by verb, and host.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0},
		}, []string{"verb", "host"}),
	}
	var errs []error
	promreg.Share(reg, &errs, &m.requests)
	promreg.Share(reg, &errs, &m.duration)
	if err := promreg.Join("REST client", errs); err != nil {
		return nil, err
	}
	return m, nil
}

// Wrap returns next, counting and timing each request. It has the shape of
// rest.Config.Wrap's argument.
func (m *RESTClientMetrics) Wrap(next http.RoundTripper) http.RoundTripper {
	return instrumented{m: m, next: next}
}

type instrumented struct {
	m    *RESTClientMetrics
	next http.RoundTripper
}

func (t instrumented) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	code := "<error>"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.requests.WithLabelValues(code, r.Method, r.URL.Host).Inc()
	t.m.duration.WithLabelValues(r.Method, r.URL.Host).Observe(time.Since(start).Seconds())
	return resp, err
}
