package controller

import (
	"context"
	"fmt"

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
