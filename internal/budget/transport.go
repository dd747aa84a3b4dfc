package budget

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

type laneKey struct{}

// ControllerKey is the context key under which a reconcile's context
// carries its controller's name (a string): package controller's workers
// set it, and the Transport files the request in the reconcile lane under
// that controller.
type ControllerKey struct{}

// WithLane returns ctx carrying lane: a request sent with it through a
// Transport goes in lane, whatever else the context or request says.
func WithLane(ctx context.Context, lane Lane) context.Context {
	return context.WithValue(ctx, laneKey{}, lane)
}

// WithController returns ctx carrying the name of the controller whose
// requests it sends.
func WithController(ctx context.Context, controller string) context.Context {
	return context.WithValue(ctx, ControllerKey{}, controller)
}

// Classify returns the lane of req, and in the reconcile lane its
// controller: a lane its context names (WithLane) first; then a review
// (SubjectAccessReview, TokenReview, ...) in the webhook lane; then a
// watch in the informer lane; then the controller its context names;
// anything else is the reconcile lane's, unattributed.
func Classify(req *http.Request) (Lane, string) {
	ctx := req.Context()
	if l, ok := ctx.Value(laneKey{}).(Lane); ok && l >= 0 && l < numLanes {
		return l, ""
	}
	if req.Method == http.MethodPost && isReview(req.URL.Path) {
		return LaneWebhook, ""
	}
	if isWatch(req.URL.RawQuery) {
		return LaneInformer, ""
	}
	if c, ok := ctx.Value(ControllerKey{}).(string); ok && c != "" {
		return LaneReconcile, c
	}
	return LaneReconcile, Unattributed
}

// isWatch reports whether a request's query asks for a watch.
func isWatch(rawQuery string) bool {
	return strings.Contains(rawQuery, "watch=true") || strings.Contains(rawQuery, "watch=1")
}

// isReview reports whether path creates a review of the authentication
// or authorization API groups.
func isReview(path string) bool {
	return (strings.HasPrefix(path, "/apis/authorization.k8s.io/") || strings.HasPrefix(path, "/apis/authentication.k8s.io/")) &&
		strings.HasSuffix(path, "reviews")
}

// Transport wraps rt so that every request waits for the budget in its
// lane (see Classify) before it is sent, unless it goes on the token its
// reconcile's worker pre-paid (see Prepaid), then for room in the window
// of requests in flight (unless it is a watch); each response that
// pushes back (429, or a Retry-After header) narrows the window (a 429 of
// priority and fairness) or lowers the budget's rate, as do the requests
// of the last two seconds when most were answered slowly (measuredKind
// says which requests are measured, docs/api-budget.md the thresholds). A
// request whose context ends while it waits is not sent: the error wraps
// the context's cause. It has the shape of rest.Config.Wrap's argument.
func (b *Budget) Transport(rt http.RoundTripper) http.RoundTripper {
	return transport{b: b, next: rt}
}

// LeaseTransport wraps rt as Transport does, but files every request in
// LaneLease: for the clients of lease renewals alone, which never wait.
func (b *Budget) LeaseTransport(rt http.RoundTripper) http.RoundTripper {
	return transport{b: b, next: rt, lease: true}
}

// Holds reports whether rt is one of b's Transports or LeaseTransports,
// or wraps one: whether its requests are under b already. It looks
// through each transport that says what it wraps (WrappedTransport, as
// client-go's own wrappers do: utilnet.RoundTripperWrapper), so a
// transport that does not say hides what is under it.
func (b *Budget) Holds(rt http.RoundTripper) bool {
	for rt != nil {
		if t, ok := rt.(transport); ok && t.b == b {
			return true
		}
		w, ok := rt.(interface{ WrappedTransport() http.RoundTripper })
		if !ok {
			return false
		}
		rt = w.WrappedTransport()
	}
	return false
}

// DefaultLane wraps rt so that a request whose context names neither a
// lane nor a controller goes in lane: the manager gives its cache's HTTP
// client the informer lane so, while a lazy read inside a reconcile stays
// the controller's. Put it outside the Budget's Transport.
func DefaultLane(rt http.RoundTripper, lane Lane) http.RoundTripper {
	return defaultLane{lane: lane, next: rt}
}

type transport struct {
	b     *Budget
	next  http.RoundTripper
	lease bool // every request in LaneLease
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	lane, controller := LaneLease, ""
	if !t.lease {
		lane, controller = Classify(req)
	}
	// A reconcile's first request goes on the token its worker waited for
	// before it took the key.
	if !t.b.spend(req.Context(), lane, controller) {
		if err := t.b.Wait(req.Context(), lane, controller); err != nil {
			closeBody(req.Body)
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	reserved := t.b.spendRoom(req.Context(), lane, controller)
	resp, err := t.send(req, lane, controller, reserved)
	// A lease renewal or a health check that priority and fairness turned
	// away is sent again as soon as the requests in flight allow, not
	// after the Retry-After client-go would sleep: a renewal that waits a
	// second or two per 429 misses its renew deadline, and the process
	// its lease, to a level whose seats are busy for a moment.
	for attempt := 0; err == nil && lane.urgent() && attempt < urgentRetries && rejectedByPriorityLevel(resp); attempt++ {
		again, ok := rewound(req)
		if !ok {
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		select {
		case <-t.b.clock.After(urgentBackoff << attempt):
		case <-req.Context().Done():
			closeBody(again.Body)
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, context.Cause(req.Context()))
		}
		req = again
		resp, err = t.send(req, lane, controller, false)
	}
	return resp, err
}

// urgentRetries and urgentBackoff bound the retries of an urgent
// request's 429s: at most 6, after 25ms, doubling (1.6 seconds in all).
const (
	urgentRetries = 6
	urgentBackoff = 25 * time.Millisecond
)

// rejectedByPriorityLevel reports whether resp is priority and fairness's
// rejection: a 429 that names its priority level.
func rejectedByPriorityLevel(resp *http.Response) bool {
	return resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != ""
}

// rewound returns req to send again, its body read afresh; false if it
// cannot be.
func rewound(req *http.Request) (*http.Request, bool) {
	again := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return again, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	again.Body = body
	return again, true
}

// send sends req, of lane and controller, once there is room among the
// requests in flight (unless a watch; in the room its worker reserved,
// if reserved), and hears what the server says of it.
func (t transport) send(req *http.Request, lane Lane, controller string, reserved bool) (*http.Response, error) {
	release, epoch := func() {}, 0
	if !isWatch(req.URL.RawQuery) {
		// A reconcile's first request goes in the room its worker
		// reserved, if it waited for one, ahead of other requests.
		r, e, err := t.b.win.acquire(req.Context(), t.b.clock.Now, lane.urgent(), reserved)
		if err != nil {
			closeBody(req.Body)
			return nil, fmt.Errorf("%s %s: wait for room among the requests in flight: %w", req.Method, req.URL.Path, err)
		}
		release, epoch = r, e
	}
	start := t.b.clock.Now()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		// Without a response, nothing the server said, and no latency but
		// the caller's deadline's.
		release()
		return resp, err
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		t.b.win.answered()
	}
	t.b.answered(req, resp, lane, controller, start, epoch)
	// The server holds the request's seat until it has written the body.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases the request's room in the window once the body
// is read to its end or closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	b.release()
	return b.ReadCloser.Close()
}

// answered hears the server's answer resp to req, of lane and controller,
// sent at start after the window let it in at epoch: a pushback, or a
// latency measured.
func (b *Budget) answered(req *http.Request, resp *http.Response, lane Lane, controller string, start time.Time, epoch int) {
	p := Pushback{Lane: lane, Controller: controller,
		FlowSchema:    resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"),
		PriorityLevel: resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"),
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" {
		p.Reason, p.Status, p.RetryAfter = ReasonRetryAfter, resp.StatusCode, resp.Header.Get("Retry-After")
		if resp.StatusCode == http.StatusTooManyRequests {
			p.Reason = ReasonTooManyRequests
		}
		b.pushedBack(epoch, p)
	} else if kind, ok := measuredKind(req); ok {
		b.observed(kind, start, p)
	}
}

// WrappedTransport returns the transport underneath, so that client-go
// can see through it (utilnet.CloseIdleConnectionsFor).
func (t transport) WrappedTransport() http.RoundTripper { return t.next }

type defaultLane struct {
	lane Lane
	next http.RoundTripper
}

func (t defaultLane) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Value(laneKey{}) == nil && ctx.Value(ControllerKey{}) == nil {
		req = req.WithContext(WithLane(ctx, t.lane))
	}
	return t.next.RoundTrip(req)
}

func (t defaultLane) WrappedTransport() http.RoundTripper { return t.next }

func closeBody(b io.ReadCloser) {
	if b != nil {
		_ = b.Close()
	}
}
