package manager

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Options configure New. The zero value is valid: no leader election,
// metrics on :8080, health probes off, no webhook server, a 30s shutdown,
// the Go memory limit at 90% of the container's.
type Options struct {
	// Scheme maps Go types to kinds, for the cache, the client and events.
	// Defaults to client-go's kubernetes scheme; add your own types to a
	// scheme of your own built from it.
	Scheme *runtime.Scheme

	// Cache configures the cache. Where its Scheme, Mapper, HTTPClient,
	// Registerer and Logger are empty the manager sets its own (Scheme, its
	// REST mapper and HTTP client, Registry, Logger named "cache"); a value
	// set here is kept, and configures the cache only: the manager's
	// client still uses Options.Scheme and the manager's mapper and HTTP
	// client. An HTTPClient set here still sends under the manager's API
	// budget, in the informer lane (unless APIBudget.Off): the cache gets
	// a copy whose transport is the budget's over the client's own (its
	// TLS, proxy and credentials are kept). A client built from Config is
	// under the budget already, and its requests wait only once; a
	// transport of yours wrapped around it must say what it wraps
	// (WrappedTransport, as client-go's own wrappers do), or they wait
	// twice.
	Cache cache.Options

	// CacheSyncTimeout bounds how long Start waits for the cache to sync
	// before it fails with an error naming each type not synced. Defaults
	// to 2m.
	CacheSyncTimeout time.Duration

	// LeaderElection, when enabled, starts leader-only runnables
	// (controllers, by default) once this process holds a Lease, and lets
	// them act only while it does (see ErrFenced and ErrLeaderLost).
	LeaderElection LeaderElectionOptions

	// Sharding, when enabled, shares the keys of the controllers that
	// NewController builds out among the replicas (see ShardingOptions,
	// and the package doc's "Sharded mode"). Defaults to off.
	Sharding ShardingOptions

	// Metrics configures the /metrics endpoint.
	Metrics MetricsOptions

	// Health configures the /healthz and /readyz endpoints.
	Health HealthOptions

	// Webhook configures the admission webhook server (see package
	// webhook). Defaults to none.
	Webhook WebhookOptions

	// MemoryLimit sets the Go runtime's memory limit from the container's
	// at Start, and watches the collector while it runs. Defaults to 90%
	// of the cgroup's memory limit less the binary's resident pages,
	// unless GOMEMLIMIT is set.
	MemoryLimit MemoryLimitOptions

	// APIBudget configures the one budget of API requests that every
	// client the manager makes shares, in lanes: lease renewals first,
	// then reviews, reconciles by controller weight, and informers. On by
	// default, with no fixed rate unless the rest.Config sets a QPS (see
	// APIBudgetOptions).
	APIBudget APIBudgetOptions

	// ShutdownTimeout bounds a graceful stop: reconciles in flight, the
	// lease's release, caches and servers get this long in all. Defaults to
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// Logger is the manager's logger, passed to everything it starts.
	// Defaults to klog's logger (klog.Background()), which client-go logs
	// through: standard error unless klog is configured otherwise, so that
	// a failed reconcile or an unreachable API server is never silent.
	// logr.Discard() is the zero Logger, so it too means the default.
	Logger logr.Logger

	// TracerProvider, when set, traces reconciles: each controller that
	// NewController builds makes a span per reconcile (unless its own
	// options name another provider), and the manager's clients make a
	// child span for each API request sent with the reconcile's context
	// (see package tracing; tracing.FromEnv builds one from the OTEL_*
	// environment variables). Defaults to nil: no spans and no tracing
	// calls at all. The manager sets no global provider.
	TracerProvider trace.TracerProvider
}

// LeaderElectionOptions configure leader election through a
// coordination.k8s.io/v1 Lease. The Lease is renewed through a client of
// its own, with its own rate limiter and connection, so that reconciles
// spending the rest.Config's QPS, Burst or RateLimiter never delay a
// renewal (as for ShardingOptions' Leases).
type LeaderElectionOptions struct {
	// Enabled turns leader election on. Defaults to false: every runnable
	// starts at once.
	Enabled bool
	// Name of the Lease. Required when Enabled.
	Name string
	// Namespace of the Lease. Defaults to the namespace of the pod's
	// service account when in a cluster; required otherwise.
	Namespace string
	// Identity of this candidate. Defaults to the host name and a random
	// suffix, so that two processes on one host differ.
	Identity string
	// LeaseDuration is how long a standby waits, after the leader last
	// renewed, before it takes over. Defaults to 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader acts after its last successful
	// renewal was sent, and how long it tries to renew before it gives the
	// lease up. It must be shorter than LeaseDuration in whole seconds
	// (the Lease stores seconds): the difference is the margin in which a
	// reconcile's last write lands before a standby may take over.
	// Defaults to 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the time between tries to acquire or renew. Defaults
	// to 2s.
	RetryPeriod time.Duration
	// ReleaseOnCancel gives the lease up when Start's context ends, after
	// the leader-only runnables have stopped, so that a standby takes over
	// at once instead of after LeaseDuration; client-go's elector also
	// gives it up when renewals fail. Only a Lease that, as last read,
	// names this process as its holder is released: never one another
	// process took meanwhile. Defaults to false.
	ReleaseOnCancel bool
	// ExitOnLoss makes Start return an error wrapping ErrLeaderLost when
	// the lease is lost (renewals failed for RenewDeadline, or another
	// process took it), canceling leader-only work without waiting, as
	// controller-runtime's manager does. Defaults to false: the manager
	// rides the loss out, keeping its caches, queues and leader-only
	// runnables, which wait at the fence while it campaigns again, and act
	// again once it is elected (see ErrLeaderLost).
	ExitOnLoss bool
}

// MetricsOptions configure the /metrics endpoint.
type MetricsOptions struct {
	// BindAddress is where /metrics is served, such as ":8080" or
	// "127.0.0.1:0"; "0" turns it off. Defaults to ":8080".
	BindAddress string
	// Secure serves over HTTPS and lets in only requests whose bearer token
	// the API server authenticates (TokenReview) and authorizes for "get"
	// on the non-resource URL /metrics (SubjectAccessReview), as an
	// in-cluster operator should. The operator's RBAC needs create on
	// tokenreviews and subjectaccessreviews. Defaults to false.
	Secure bool
	// CertDir holds tls.crt and tls.key for Secure. Defaults to a
	// self-signed certificate made at start.
	CertDir string
	// Pprof serves net/http/pprof under /debug/pprof/ beside /metrics (and
	// behind the same authentication when Secure). Defaults to false.
	Pprof bool
	// Auth bounds the reviews Secure asks the API server for. Defaults to
	// the defaults of its fields.
	Auth MetricsAuthOptions
}

// MetricsAuthOptions bound the reviews that MetricsOptions.Secure asks the
// API server for, however many requests strangers send: answers are
// cached, and tokens not seen authenticated are reviewed within a budget,
// over which a request gets 429 Too Many Requests with Retry-After. The
// caches are keyed by the token's SHA-256, and a token over 8 KiB gets
// 401 without a review.
type MetricsAuthOptions struct {
	// TTL is how long the TokenReview that authenticated a token, and the
	// SubjectAccessReview that allowed a user a verb on a path, are
	// reused. Defaults to 2m, as kube-rbac-proxy's and the API server's
	// webhook token cache.
	TTL time.Duration
	// FailureTTL is how long a token that did not authenticate, and a
	// denial, are remembered. Defaults to 10s.
	FailureTTL time.Duration
	// CacheSize bounds each cache (tokens authenticated, tokens refused,
	// decisions); the least recently used entry goes first. Defaults to
	// 4096.
	CacheSize int
	// TokenReviewsPerSecond and TokenReviewBurst bound the TokenReviews of
	// tokens not seen authenticated within the hour: over any time T at
	// most TokenReviewBurst + TokenReviewsPerSecond × T, however many
	// distinct tokens arrive. A token seen authenticated is reviewed
	// again after TTL outside this budget, so a scraper with a good
	// token is served through a flood. Default to 5 and 10.
	TokenReviewsPerSecond float64
	TokenReviewBurst      int
}

// HealthOptions configure the probe endpoints.
type HealthOptions struct {
	// BindAddress is where /healthz and /readyz are served, such as
	// ":8081"; "" or "0" turns them off. Defaults to off.
	BindAddress string
	// UnwatchedGrace is how long a cached type may go without a watch
	// (informers reopen an ended watch within moments; a longer gap means
	// the API server is out of reach) before /readyz fails for it.
	// Defaults to 5s.
	UnwatchedGrace time.Duration
}

// Defaults of Options. The exported ones are for an operator's flags (its
// leader-election flags default to the lease's) and tests; the fields'
// docs state every one.
const (
	DefaultShutdownTimeout = 30 * time.Second
	DefaultLeaseDuration   = 15 * time.Second
	DefaultRenewDeadline   = 10 * time.Second
	DefaultRetryPeriod     = 2 * time.Second

	defaultCacheSyncTimeout   = 2 * time.Minute
	defaultMetricsBindAddress = ":8080"
	defaultUnwatchedGrace     = 5 * time.Second
)

func (o Options) validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"CacheSyncTimeout", o.CacheSyncTimeout},
		{"ShutdownTimeout", o.ShutdownTimeout},
		{"Health.UnwatchedGrace", o.Health.UnwatchedGrace},
		{"LeaderElection.LeaseDuration", o.LeaderElection.LeaseDuration},
		{"LeaderElection.RenewDeadline", o.LeaderElection.RenewDeadline},
		{"LeaderElection.RetryPeriod", o.LeaderElection.RetryPeriod},
		{"Metrics.Auth.TTL", o.Metrics.Auth.TTL},
		{"Metrics.Auth.FailureTTL", o.Metrics.Auth.FailureTTL},
	} {
		if d.v < 0 {
			add("Options.%s is %v: it must be 0 (the default) or positive", d.field, d.v)
		}
	}
	if a := o.Metrics.Auth; a.CacheSize < 0 || a.TokenReviewBurst < 0 || a.TokenReviewsPerSecond < 0 {
		add("Options.Metrics.Auth: CacheSize (%d), TokenReviewBurst (%d) and TokenReviewsPerSecond (%v) must be 0 (the default) or positive", a.CacheSize, a.TokenReviewBurst, a.TokenReviewsPerSecond)
	}
	if le := o.LeaderElection; le.Enabled {
		if le.Name == "" {
			add("Options.LeaderElection.Name is empty: name the Lease, such as \"my-operator-leader\"")
		}
		le = le.withDefaults()
		if whole := leaseSeconds(le); whole <= le.RenewDeadline {
			lease := le.LeaseDuration.String()
			if whole != le.LeaseDuration {
				lease += ", which the Lease stores as " + whole.String()
			}
			add("Options.LeaderElection.LeaseDuration (%s) must be longer than RenewDeadline (%v): the difference is the margin by which a frozen leader stops acting before a standby may take over", lease, le.RenewDeadline)
		}
		if le.RenewDeadline <= le.RetryPeriod {
			add("Options.LeaderElection.RenewDeadline (%v) must be longer than RetryPeriod (%v)", le.RenewDeadline, le.RetryPeriod)
		}
	}
	for _, a := range []struct{ field, addr string }{
		{"Metrics.BindAddress", o.Metrics.BindAddress},
		{"Health.BindAddress", o.Health.BindAddress},
	} {
		if a.addr == "" || a.addr == "0" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			add("Options.%s %q: want host:port, such as \":8080\", or \"0\" for off: %w", a.field, a.addr, err)
		}
	}
	errs = append(errs, o.Sharding.validate()...)
	if err := o.Webhook.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.MemoryLimit.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.APIBudget.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// leaseSeconds is the lease duration as the Lease records it, and as
// standbys count it: client-go writes whole seconds, rounded down.
func leaseSeconds(le LeaderElectionOptions) time.Duration {
	return le.LeaseDuration.Truncate(time.Second)
}

// fenceMargin is how long after a renewal was sent the leader may act:
// RenewDeadline, which validate keeps below the lease's whole seconds.
// client-go's elector gives up at about the same time, but counted from
// its first failed try rather than from the last success, so a frozen
// process would go on for up to another RenewDeadline after it wakes.
func fenceMargin(le LeaderElectionOptions) time.Duration {
	return le.RenewDeadline
}

func (le LeaderElectionOptions) withDefaults() LeaderElectionOptions {
	if le.LeaseDuration == 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	return le
}
