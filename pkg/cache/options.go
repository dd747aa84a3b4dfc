package cache

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/sharding"
)

// Options configure New. The zero value is valid.
type Options struct {
	// Scheme maps Go types to kinds and decodes typed objects. Defaults to
	// client-go's kubernetes scheme, which holds every built-in type.
	Scheme *runtime.Scheme

	// Mapper maps kinds to resources. Defaults to controller-runtime's
	// discovery-backed dynamic mapper, which learns of a CRD installed
	// after start.
	Mapper meta.RESTMapper

	// HTTPClient carries every request. Defaults to rest.HTTPClientFor of
	// the config passed to New.
	HTTPClient *http.Client

	// Namespaces are where namespaced types are cached unless a type's
	// TypeOptions.Namespaces says otherwise. Defaults to every namespace.
	Namespaces []string

	// Transform runs on every object as it enters the cache, after the
	// stripping that TypeOptions describes. It may modify the object it is
	// given, which nothing else holds yet, with one exception: an initial
	// list streamed as a watch (client-go's watch-list) hands each object
	// to it twice, and the second time the object is already cached and
	// may be read, so it must then write nothing (compare before you set:
	// the cache's own stripping and sharing do). Defaults to none.
	Transform toolscache.TransformFunc

	// ResyncPeriod makes every informer hand each cached object to its
	// handlers again at this interval. Defaults to 0: no resyncs, since
	// level-triggered reconcilers rarely need them.
	ResyncPeriod time.Duration

	// CRDPollInterval is how often a type whose CRD is not installed is
	// looked up again. Defaults to 2s.
	CRDPollInterval time.Duration

	// Registerer receives the cache's metrics (opkit_cache_objects and the
	// other Metric constants name them). Defaults to none: no metrics are
	// kept.
	Registerer prometheus.Registerer

	// Mutations configure the detector of cached objects modified in
	// place. Defaults to off unless OPKIT_CACHE_MUTATION_DETECTOR is
	// "true"; see MutationOptions.
	Mutations MutationOptions

	// UnregisteredReads say what a read of a kind nobody registered does
	// besides returning ErrNotRegistered: logged once per kind and counted
	// always; failing the test with OPKIT_CACHE_FAIL_UNREGISTERED_READS
	// set, as testenv.Main sets it. See UnregisteredReadOptions.
	UnregisteredReads UnregisteredReadOptions

	// Sharding configure the types registered with TypeOptions.Sharded.
	// Defaults to one slot, and asking the API server whether it applies
	// shard selectors; see ShardingOptions.
	Sharding ShardingOptions

	// Logger logs informer lifecycle events, and list and watch failures:
	// each new one at V(0), its retries at V(1). Defaults to klog's logger
	// (klog.Background()), which client-go logs through: standard error
	// unless klog is configured otherwise. logr.Discard() is the zero
	// Logger, so it too means the default.
	Logger logr.Logger
}

// defaultCRDPollInterval is Options.CRDPollInterval's default.
const defaultCRDPollInterval = 2 * time.Second

// TypeOptions configure one cached type. The zero value caches every object
// of the type in Options.Namespaces, stripped of managed fields and of the
// last-applied-configuration annotation.
type TypeOptions struct {
	// Namespaces are where objects of a namespaced type are cached.
	// Defaults to Options.Namespaces. Ignored for cluster-scoped types.
	Namespaces []string

	// LabelSelector and FieldSelector limit which objects the API server
	// sends. Default to everything.
	LabelSelector labels.Selector
	FieldSelector fields.Selector

	// Transform runs on each object as it enters the cache, after the
	// stripping below, instead of Options.Transform. Defaults to
	// Options.Transform.
	Transform toolscache.TransformFunc

	// KeepManagedFields keeps metadata.managedFields, which the cache drops
	// by default: server-side apply's bookkeeping, often a third of an
	// object, read by almost no reconciler. Defaults to false.
	KeepManagedFields bool

	// KeepLastApplied keeps the kubectl.kubernetes.io/last-applied-configuration
	// annotation, which the cache drops by default: kubectl apply stores a
	// whole second copy of the object in it. A plain update of a copy
	// without it deletes it on the API server; the manager's CachedClient
	// updates so as to keep it (see package pkg/cachedclient). Defaults to false.
	KeepLastApplied bool

	// Sharded caches only the objects of the slots last given to
	// Cache.SetSlots (none until then), by ShardKey. Where the API server
	// applies shard selectors, each informer lists and watches only its
	// slots; elsewhere, and always for sharding.ByControllerOwner (the
	// API server cannot select on an owner), the informer receives every
	// object and keeps only its slots'. Defaults to false: every object.
	Sharded bool

	// ShardKey decides an object's slot when Sharded. Defaults to
	// sharding.ByUID.
	ShardKey sharding.Key

	// Owner names who holds the returned Lister, such as a controller:
	// the type's informers run while any owner's Lister holds them and
	// stop once the last is released (Lister.Release), so that watches
	// can come and go while the cache runs. Owners share a registration
	// like any two registrations of equal options; TypeStatus.Owners and
	// opkit_cache_holds say who holds what. Defaults to none: the type is
	// held for the cache's life, as by every registration without an
	// owner, and Release does nothing.
	Owner string
}

// lastAppliedAnnotation is the annotation that kubectl's client-side apply
// stores the applied object in.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

func (o Options) validate() error {
	var errs []error
	if o.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("Options.ResyncPeriod is %v: it must be 0 (no resyncs) or positive", o.ResyncPeriod))
	}
	if o.CRDPollInterval < 0 {
		errs = append(errs, fmt.Errorf("Options.CRDPollInterval is %v: it must be 0 (the default) or positive", o.CRDPollInterval))
	}
	if f := o.Sharding.ServerFilter; f > ServerFilterOff {
		errs = append(errs, fmt.Errorf("Options.Sharding.ServerFilter is %d: use ServerFilterDetect, ServerFilterOn or ServerFilterOff", f))
	}
	if err := validateNamespaces("Options.Namespaces", o.Namespaces); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateNamespaces(field string, namespaces []string) error {
	for i, ns := range namespaces {
		if ns == "" {
			return fmt.Errorf("%s[%d] is empty: leave %s empty to cache every namespace", field, i, field)
		}
		if slices.Contains(namespaces[:i], ns) {
			return fmt.Errorf("%s lists %q twice", field, ns)
		}
	}
	return nil
}
