package controller

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/internal/budget"
	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/consistency"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

type reconcileIDKey struct{}

// reconcileContext is a reconcile's context: it carries the reconcile's ID,
// its logger and, with read-your-writes on, the writes the reconcile
// makes, and holds its logger's key/values, in one allocation where
// context.WithValue would take one per value, and the Writes and the
// key/values one each. A key whose writes the cache has not caught up with
// keeps them, and so this context, until its next reconcile.
type reconcileContext struct {
	context.Context
	id        reconcileID
	logger    any  // the reconcile's logr.Logger, as logr.FromContext finds it
	recording bool // whether writes is the reconcile's (read-your-writes on)
	writes    consistency.Writes
	// prepaid is the worker's pre-paid token of the API budget, nil
	// without a budget, for the reconcile's first request to spend. It is
	// the worker's, not the reconcile's: a request sent with this context
	// after the reconcile may spend the token the worker took for its next
	// key, one of the same controller, whose share it is all the same.
	prepaid *budget.Prepaid
	// namespace and name are the key's, when it is a reconcile.Request,
	// which the logger's key/values point to (see logString).
	namespace, name logString
	kv              [6]any // the logger's key/values' backing array (see values)
}

// values are the key/value pairs of the reconcile's logger: key's (see
// appendKeyValues) and "reconcileID". A reconcile.Request's are c's own
// logStrings, and the ID c's own: pointers, which an interface holds
// without allocating, where a string takes an allocation of its own.
func values[K comparable](c *reconcileContext, key K) []any {
	if k, ok := any(&key).(*reconcile.Request); ok {
		c.namespace.s, c.name.s = k.Namespace, k.Name
		kv := c.kv[:0]
		if k.Namespace != "" {
			kv = append(kv, "namespace", &c.namespace)
		}
		return append(kv, "name", &c.name, "reconcileID", &c.id)
	}
	return append(appendKeyValues(c.kv[:0], key), "reconcileID", &c.id)
}

// logString is a string that a logger's key/values hold by pointer. Log
// sinks print it as the string: it is a logr.Marshaler (zapr, funcr), a
// fmt.Stringer (klog, anything formatting with fmt) and an
// encoding.TextMarshaler (slog's handlers, encoding/json).
type logString struct{ s string }

func (l *logString) String() string               { return l.s }
func (l *logString) MarshalLog() any              { return l.s }
func (l *logString) MarshalText() ([]byte, error) { return []byte(l.s), nil }

// reconcileID is a reconcile's ID, a UUID, which a logger's key/values hold
// by pointer and sinks print as its string, as logString.
type reconcileID uuid.UUID

func (id *reconcileID) String() string               { return uuid.UUID(*id).String() }
func (id *reconcileID) MarshalLog() any              { return id.String() }
func (id *reconcileID) MarshalText() ([]byte, error) { return uuid.UUID(*id).MarshalText() }

// logrContextKey is the key under which logr.NewContext keeps a logger,
// which logr does not export, learnt by having logr look a logger up: so
// that a reconcileContext hands logr.FromContext, and controller-runtime's
// log.FromContext, the reconcile's logger itself, where a context of
// logr.NewContext's would take two allocations more a reconcile.
var logrContextKey = func() any {
	p := &keyProbe{Context: context.Background()}
	_, _ = logr.FromContext(p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

func (c *reconcileContext) Value(key any) any {
	if key == logrContextKey {
		return c.logger
	}
	switch key.(type) {
	case reconcileIDKey:
		return c.id.String()
	case consistency.ContextKey:
		if c.recording {
			return &c.writes
		}
	case budget.PrepaidKey:
		if c.prepaid != nil {
			return c.prepaid
		}
	}
	return c.Context.Value(key)
}

// ReconcileID returns the ID of the reconcile whose context ctx is, or ""
// outside a reconcile. The same ID is in every log line of the reconcile,
// under "reconcileID".
func ReconcileID(ctx context.Context) string {
	id, _ := ctx.Value(reconcileIDKey{}).(string)
	return id
}

// RecordWrite records, for read-your-writes, a write that the reconcile
// whose context ctx is made through a client the manager did not make (a
// clientset, a dynamic client): the key's next reconcile waits for the
// cache to catch up with it, as it does for the writes made through the
// manager's clients, which are recorded without it. c is the cache that
// would hold the object (mgr.Cache()), gvk its kind, and obj the object as
// the API server returned it from a create, update or patch (its
// resourceVersion is the write's) or, when deleted is true, the object
// deleted. A kind c does not cache needs no wait. Outside a reconcile, or
// with read-your-writes off, it does nothing.
func RecordWrite(ctx context.Context, c *cache.Cache, gvk schema.GroupVersionKind, obj metav1.Object, deleted bool) {
	if ws := consistency.FromContext(ctx); ws != nil {
		ws.Add(cache.Internal(c, cacheaccess.Key{}).Written(gvk, obj, deleted))
	}
}

// appendKeyValues appends the logger's key/value pairs for key to kv:
// "namespace" and "name" for a reconcile.Request, as Kubernetes logs spell
// them, and "key" for anything else. It asserts on a pointer to key, not on
// key converted to an interface, which would copy key to the heap on every
// call.
func appendKeyValues[K comparable](kv []any, key K) []any {
	if k, ok := any(&key).(*reconcile.Request); ok {
		if k.Namespace == "" {
			return append(kv, "name", k.Name)
		}
		return append(kv, "namespace", k.Namespace, "name", k.Name)
	}
	if k, ok := any(key).(fmt.Stringer); ok {
		return append(kv, "key", k.String())
	}
	return append(kv, "key", key)
}

// newReconcileID returns a random (version 4) UUID. Its bits come from
// math/rand/v2's generator (ChaCha8, seeded by the runtime from the
// operating system), not from crypto/rand as uuid.NewString's do: an ID
// names a reconcile in logs and spans and guards nothing, and a read of the
// system's random source per reconcile is the dearest step of a reconcile
// that does little.
func newReconcileID() reconcileID {
	var u reconcileID
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant: RFC 9562
	return u
}
