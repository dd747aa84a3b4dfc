package controller

import (
	"context"
	"fmt"

	"github.com/opkit-dev/opkit/internal/consistency"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

type reconcileIDKey struct{}

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
// manager's clients, which are recorded without it. Get w from the cache
// that would hold the object: cache.Cache.Written. Outside a reconcile, or
// with read-your-writes off, it does nothing.
func RecordWrite(ctx context.Context, w cache.Written) {
	if ws := consistency.FromContext(ctx); ws != nil {
		ws.Add(w)
	}
}

// keyValues are the logger's key/value pairs for key: "namespace" and
// "name" for a reconcile.Request, as Kubernetes logs spell them, and "key"
// for anything else.
func keyValues[K comparable](key K) []any {
	switch k := any(key).(type) {
	case reconcile.Request:
		if k.Namespace == "" {
			return []any{"name", k.Name}
		}
		return []any{"namespace", k.Namespace, "name", k.Name}
	case fmt.Stringer:
		return []any{"key", k.String()}
	default:
		return []any{"key", key}
	}
}
