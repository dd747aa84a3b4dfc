package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/opkit-dev/opkit/internal/budget"
)

// Health is whether a member's API server answered the fleet's last probe
// of it (its /readyz), and since when that has been so: the member's
// reachable condition.
type Health struct {
	// Reachable is true once the API server answered ready, false once it
	// did not; a member not probed yet is reachable.
	Reachable bool
	// Since is when Reachable last changed: the engagement, or a probe.
	Since time.Time
	// Err is why the last probe failed; nil when Reachable.
	Err error
}

// The member's condition, Health.Condition.
const (
	// ConditionReachable is the condition's type.
	ConditionReachable = "Reachable"
	// ReasonReady is its reason when the API server answered ready.
	ReasonReady = "Ready"
	// ReasonUnreachable is its reason when it did not.
	ReasonUnreachable = "Unreachable"
)

// Condition returns h as a condition of type ConditionReachable, for an
// operator to set in the status of what stands for the member (an
// inventory object on the hub, say) with meta.SetStatusCondition: True
// with ReasonReady, or False with ReasonUnreachable and the probe's error
// as its message; its LastTransitionTime is Since, to the second, as the
// API server keeps it.
func (h Health) Condition() metav1.Condition {
	c := metav1.Condition{Type: ConditionReachable, Status: metav1.ConditionTrue, Reason: ReasonReady,
		Message: "The API server answered ready.", LastTransitionTime: metav1.NewTime(h.Since.Truncate(time.Second))}
	if !h.Reachable {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonUnreachable, "The API server did not answer ready."
		if h.Err != nil {
			c.Message = h.Err.Error()
		}
	}
	return c
}

const (
	defaultProbeInterval = 10 * time.Second
	// probers is how many members are probed at once, however many the
	// fleet has: a thousand members cost no thousand goroutines.
	probers = 4
)

// Metric names of the fleet (Options.Registerer).
const (
	// MetricMembers is the number of engaged members.
	MetricMembers = "opkit_fleet_members"
	// MetricMemberReachable is 1 for a member whose API server answered
	// the last probe ready, 0 for one that did not, by cluster.
	MetricMemberReachable = "opkit_fleet_member_reachable"
)

type fleetMetrics struct {
	members   prometheus.Gauge
	reachable *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*fleetMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &fleetMetrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricMembers, Help: "Member clusters the fleet has engaged."}),
		reachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricMemberReachable, Help: "1 if the member cluster's API server answered the fleet's last probe ready, else 0, by cluster.",
		}, []string{"cluster"}),
	}
	for _, c := range []prometheus.Collector{m.members, m.reachable} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the fleet's metrics: %w", err)
		}
	}
	return m, nil
}

// Health returns the member's reachable condition.
func (c *Cluster) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

// reachable returns the member's Health and a context that ends, with a
// cause wrapping ErrUnreachable, once a probe finds it unreachable (at
// once if the last did).
func (c *Cluster) reachable() (Health, context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health, c.reach
}

// onUnreachable has cancel called, with a cause wrapping ErrUnreachable,
// once a probe finds the member unreachable, before the requests in
// flight on it fail; it reports false, and registers nothing, if the last
// probe did. Call the func it returns once cancel's reconcile ends.
func (c *Cluster) onUnreachable(cancel context.CancelCauseFunc) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reach.Err() != nil {
		return nil, false
	}
	key := &cancel
	if c.ending == nil {
		c.ending = map[*context.CancelCauseFunc]struct{}{}
	}
	c.ending[key] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.ending, key)
	}, true
}

// setHealth records a probe's outcome, and reports whether it changed
// the member's reachability.
func (c *Cluster) setHealth(err error, now time.Time) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reachable := err == nil
	changed = reachable != c.health.Reachable
	if changed {
		c.health.Since = now
		if reachable {
			c.reach, c.unreachable = context.WithCancelCause(context.Background())
		} else {
			cause := fmt.Errorf("%w: %w", ErrUnreachable, err)
			for cancel := range c.ending {
				(*cancel)(cause)
			}
			c.unreachable(cause)
		}
	}
	c.health.Reachable, c.health.Err = reachable, err
	return changed
}

// probe asks the member's API server whether it is ready, within timeout.
// The probe goes in the health lane of the member's budget, which never
// waits for a token: however flooded the member's budget, its probe is
// not held up, and says only whether the member answers.
func (c *Cluster) probe(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(budget.WithLane(ctx, budget.LaneHealth), timeout)
	defer cancel()
	_, err := c.discovery.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("probe the API server of member cluster %q: %w", c.name, err)
	}
	return nil
}

// newDiscovery returns the client the member is probed with.
func newDiscovery(c *Cluster) error {
	d, err := discovery.NewDiscoveryClientForConfigAndClient(c.config, c.httpClient)
	if err != nil {
		return fmt.Errorf("make its probe's client: %w", err)
	}
	c.discovery = d
	return nil
}

// probeAll probes every engaged member every interval, probers at a time,
// until ctx ends, and records each outcome in the member's Health and the
// reachable metric; a member whose reachability changes is logged.
func (f *Fleet) probeAll(ctx context.Context, interval time.Duration) {
	timeout := min(interval, 5*time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.probeOnce(ctx, timeout)
	}
}

func (f *Fleet) probeOnce(ctx context.Context, timeout time.Duration) {
	f.mu.Lock()
	members := make([]*Cluster, 0, len(f.members))
	for _, c := range f.members {
		members = append(members, c)
	}
	f.mu.Unlock()
	work := make(chan *Cluster)
	var wg sync.WaitGroup
	for range min(probers, len(members)) {
		wg.Go(func() {
			for c := range work {
				f.record(c, c.probe(ctx, timeout))
			}
		})
	}
	for _, c := range members {
		select {
		case work <- c:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// record records the outcome of a probe of c.
func (f *Fleet) record(c *Cluster, err error) {
	if c.setHealth(err, time.Now()) && c.life.Err() == nil {
		if err != nil {
			f.opts.Logger.Error(err, "Member cluster unreachable", "cluster", c.name)
		} else {
			f.opts.Logger.Info("Member cluster reachable again", "cluster", c.name)
		}
	}
	if f.metrics == nil {
		return
	}
	v := 0.0
	if err == nil {
		v = 1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.members[c.name] == c { // else disengaged meanwhile: its series is gone
		f.metrics.reachable.WithLabelValues(c.name).Set(v)
	}
}

// reachTransport is the member's client's transport: a request fails at
// once while the member is unreachable, and ends, with a cause wrapping
// ErrUnreachable, once a probe finds it so.
type reachTransport struct {
	c    *Cluster
	next http.RoundTripper
}

func (t reachTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, reach := t.c.reachable()
	if reach.Err() != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, context.Cause(reach))
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(reach, func() { cancel(context.Cause(reach)) })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cause := context.Cause(ctx)
		stop()
		cancel(nil)
		if cause != nil && req.Context().Err() == nil { // ended by reach
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return nil, err
	}
	// The body is read after RoundTrip returns: the request's context
	// ends when it is closed.
	resp.Body = &reachBody{ReadCloser: resp.Body, done: func() { stop(); cancel(nil) }}
	return resp, nil
}

// reachBody ends its request's context when closed.
type reachBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *reachBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
