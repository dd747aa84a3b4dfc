package controller

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/opkit-dev/opkit/internal/logging"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Defaults of Options, which the fields' docs state.
const (
	defaultCacheSyncTimeout      = 2 * time.Minute
	defaultDrainTimeout          = 30 * time.Second
	defaultReadYourWritesTimeout = 5 * time.Second
)

// Options configure New. The zero value is valid.
type Options[K comparable] struct {
	// MaxConcurrentReconciles is how many keys are reconciled at once, each
	// by its own worker; one key is never reconciled by two at once.
	// Defaults to 1.
	MaxConcurrentReconciles int

	// RateLimiter decides how long a key waits before it is retried after
	// an error, or requeued by reconcile.RequeueWithBackoff. Defaults to the
	// queue's: per-key exponential backoff from 5ms, doubling with each
	// retry, at most 1000s, reset when a reconcile of the key succeeds.
	RateLimiter workqueue.TypedRateLimiter[K]

	// ReconcileTimeout ends the context of a reconcile that runs longer,
	// with a cause that wraps ErrReconcileTimeout; such reconciles are
	// counted. Defaults to 0: no timeout.
	ReconcileTimeout time.Duration

	// CrashOnPanic makes a panicking reconciler, or a panicking handler,
	// map function or predicate of one of the controller's sources, crash
	// the process, after the panic is counted. Defaults to false: a
	// reconciler's panic is recovered, logged with its stack, counted and
	// retried with backoff, like an error; a handler's is recovered, logged
	// with its stack and the object's key, counted in
	// opkit_controller_handler_panics_total, and its event dropped (the
	// object is handled again at its next change or resync).
	CrashOnPanic bool

	// ReadYourWritesTimeout bounds the read-your-writes wait before a
	// reconcile; negative turns read-your-writes off. It is on by default,
	// with a timeout of 5s: the writes a reconcile makes through the
	// manager's UncachedClient, CachedClient and writers over them (and those
	// recorded with RecordWrite) are recorded, and the next reconcile of
	// the same key first waits until the cache has caught up with them
	// (parked outside the queue, holding no worker), so that it never acts
	// on a cached copy older than its own writes: a child it created is
	// listed, a status it patched is read back. After the timeout the
	// reconcile runs with what the cache holds; waits are observed in
	// opkit_controller_read_your_writes_wait_seconds. Where it stops:
	// writes through any other client count only once recorded with
	// RecordWrite; DeleteAllOf and subresource creates (an eviction) are
	// not recorded; and only the key that wrote waits: another key's
	// reconcile reads what the cache holds, as on controller-runtime.
	ReadYourWritesTimeout time.Duration

	// CacheSyncTimeout bounds how long Start waits for its sources' initial
	// lists before it gives up with an error naming the sources not synced
	// (usually a missing CRD or RBAC rule). Defaults to 2m.
	CacheSyncTimeout time.Duration

	// DrainTimeout bounds how long Start, once its context ends, waits for
	// the reconciles in flight to finish; then their contexts are canceled.
	// Defaults to 30s.
	DrainTimeout time.Duration

	// Tenant turns on fairness in the controller's queue: keys of one
	// priority are served round-robin across tenants, so a tenant with a
	// large backlog cannot delay another's keys. Defaults to the namespace
	// when K is reconcile.Request, and to no fairness otherwise.
	Tenant func(K) string

	// TenantGroup, with Tenant, makes the queue's fairness two-level:
	// round-robin across groups of tenants, then across the tenants of a
	// group (queue.Options.TenantGroup). A fleet controller groups each
	// member's namespaces under the member (fleet.TenantMember), so that a
	// member with many busy namespaces gets one turn, as a member with one
	// does. Defaults to nil: every tenant a turn.
	TenantGroup func(tenant string) string

	// SpareWorkers is how many workers the controller runs beyond
	// MaxConcurrentReconciles that, while every regular worker is busy,
	// take only keys of a tenant (see Tenant) with no key in flight
	// (queue.Queue.GetSpare); negative runs none, so that at most
	// MaxConcurrentReconciles keys are reconciled at once. A tenant that
	// floods the queue keeps every regular worker busy but can never
	// occupy a spare, so a quiet tenant's key starts at once instead of
	// waiting for a flood reconcile to end. A spare never runs beside an
	// idle regular worker, and holds at most one key of a tenant at a time
	// and only while no regular worker holds one of that tenant: so while
	// only one tenant has work, at most MaxConcurrentReconciles keys are
	// reconciled at once, as without spares; otherwise at most
	// MaxConcurrentReconciles+SpareWorkers, and at most
	// MaxConcurrentReconciles+1 of one tenant. Defaults to
	// MaxConcurrentReconciles when the controller has a Tenant (so for
	// reconcile.Request keys), and to none without one, where every key
	// would be of one tenant.
	SpareWorkers int

	// Logger is the controller's logger; each reconcile gets it with the
	// controller's name, the key and a reconcile ID. Defaults to klog's
	// logger (klog.Background()), which client-go logs through: standard
	// error unless klog is configured otherwise, so a failed reconcile is
	// never silent. logr.Discard() is the zero Logger, so it too means the
	// default.
	Logger logr.Logger

	// Clock tells the controller's queue the time: when a key requeued with
	// reconcile.RequeueAfter, or retried after an error's backoff, is due.
	// Defaults to the system clock. Tests pass k8s.io/utils/clock/testing's
	// FakeClock and Step it past a RequeueAfter instead of waiting for it
	// (the package's examples do), or run the controller inside a
	// testing/synctest bubble with the default.
	Clock clock.Clock

	// Registerer receives the controller's metrics (see package metrics:
	// controller-runtime's reconcile metrics and client-go's workqueue
	// metrics, under their usual names). Several controllers may share
	// one. Defaults to none.
	Registerer prometheus.Registerer

	// Gate, when set, is asked before each reconcile whether this replica
	// may reconcile the key (see Gate): the manager's sharded mode sets
	// it. Defaults to nil: every key is reconciled.
	Gate Gate[K]

	// TracerProvider, when set, makes a span for each reconcile (see
	// package tracing for its name, attributes and links) and puts it in
	// the reconcile's context, so that the API requests the reconcile
	// makes through a client instrumented with tracing.Transport are its
	// children. Defaults to nil: no spans, and no tracing calls at all.
	TracerProvider trace.TracerProvider
}

// validName is what a controller's name may be: it labels metrics and logs.
var validName = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)

func (o Options[K]) validate() error {
	var errs []error
	if o.MaxConcurrentReconciles < 0 {
		errs = append(errs, fmt.Errorf("Options.MaxConcurrentReconciles is %d: it must be 0 (the default, 1) or positive", o.MaxConcurrentReconciles))
	}
	if o.TenantGroup != nil && o.tenant() == nil {
		errs = append(errs, errors.New("Options.TenantGroup is set but the controller has no Tenant: groups hold tenants; set Options.Tenant too"))
	}
	if o.SpareWorkers > 0 && o.tenant() == nil {
		errs = append(errs, fmt.Errorf("Options.SpareWorkers is %d but the controller has no Tenant: spare workers serve tenants with no key in flight; set Options.Tenant, or leave SpareWorkers 0 (none without a Tenant)", o.SpareWorkers))
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"ReconcileTimeout", o.ReconcileTimeout},
		{"CacheSyncTimeout", o.CacheSyncTimeout},
		{"DrainTimeout", o.DrainTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is %v: it must be 0 (the default) or positive", "Options."+d.field, d.v))
		}
	}
	return errors.Join(errs...)
}

func (o Options[K]) withDefaults() Options[K] {
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 1
	}
	if o.CacheSyncTimeout == 0 {
		o.CacheSyncTimeout = defaultCacheSyncTimeout
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	if o.ReadYourWritesTimeout == 0 {
		o.ReadYourWritesTimeout = defaultReadYourWritesTimeout
	}
	o.Tenant = o.tenant()
	switch {
	case o.SpareWorkers < 0 || o.Tenant == nil:
		o.SpareWorkers = 0
	case o.SpareWorkers == 0:
		o.SpareWorkers = o.MaxConcurrentReconciles
	}
	o.Logger = logging.Or(o.Logger)
	return o
}

// tenant returns Tenant or its default: the namespace for reconcile.Request
// keys, else nil.
func (o Options[K]) tenant() func(K) string {
	if o.Tenant != nil {
		return o.Tenant
	}
	// For reconcile.Request keys, func(reconcile.Request) string is
	// func(K) string: asserted once here, not per key.
	t, _ := any(func(r reconcile.Request) string { return r.Namespace }).(func(K) string)
	return t
}
