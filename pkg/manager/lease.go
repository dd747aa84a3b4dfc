package manager

import (
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// leaseRequestsPerRound is how many requests a lease's client may send in
// a RetryPeriod without waiting on its rate limiter: a renewal is one
// Update, or a Get and an Update after a conflict; a shard member's round
// adds the List of its group's Leases.
const leaseRequestsPerRound = 4

// leaseClient returns a clientset for the renewals of a Lease (leader
// election's, or a shard member's, named by agent) that reconciles cannot
// hold up:
//
//   - its own client-side rate limiter, sized for the renewal loop (at
//     least client-go's default 5 requests a second, burst 10, and
//     leaseRequestsPerRound per retry): the manager's QPS, Burst and
//     RateLimiter, which reconciles and informers spend, are not used;
//   - its own HTTP transport, so its own connection: client-go shares one
//     transport (one HTTP/2 connection) among the clients of configs with
//     the same TLS settings, and on it a renewal shares the connection's
//     flow-control window with large lists and watches;
//   - the manager's request metrics, but not its fence (a renewal is what
//     opens it) nor its tracing;
//   - the API budget's lease lane, which counts a renewal against the
//     budget but never makes it wait (docs/api-budget.md).
//
// base is the manager's config before the fence and tracing wrap it,
// with the budget's lease lane.
func leaseClient(base *rest.Config, agent string, retry time.Duration) (*kubernetes.Clientset, error) {
	c := rest.AddUserAgent(rest.CopyConfig(base), agent)
	c.RateLimiter = nil
	c.QPS = max(rest.DefaultQPS, float32(leaseRequestsPerRound/retry.Seconds()))
	c.Burst = max(rest.DefaultBurst, 2*int(c.QPS))
	if c.Dial == nil {
		// client-go's transport cache keys a transport by its dialer, so
		// a dialer of its own (client-go's default one) is a transport of
		// its own.
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return kubernetes.NewForConfig(c)
}
