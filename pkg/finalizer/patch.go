package finalizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// op is one JSON patch (RFC 6902) operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// null is a "test" operation's value for an absent member; RFC 6902 wants
// the member present.
func null() json.RawMessage { return json.RawMessage("null") }

const finalizersPath = "/metadata/finalizers"

// ensureOps appends name to the finalizers, guarded by the list having, on
// the server, exactly the entries have (JSON null matches an absent list)
// and by the object not being deleted.
func ensureOps(have []string, name string) []op {
	ops := []op{{Op: "test", Path: "/metadata/deletionTimestamp", Value: null()}}
	if len(have) == 0 {
		return append(ops,
			op{Op: "test", Path: finalizersPath, Value: null()},
			op{Op: "add", Path: finalizersPath, Value: []string{name}})
	}
	return append(ops,
		op{Op: "test", Path: finalizersPath, Value: have},
		op{Op: "add", Path: finalizersPath + "/-", Value: name})
}

// removeOps removes every entry of name from the finalizers, last first so
// that the indexes of the others still hold, each guarded by its value.
func removeOps(have []string, name string) []op {
	var ops []op
	for i := len(have) - 1; i >= 0; i-- {
		if have[i] == name {
			p := fmt.Sprintf("%s/%d", finalizersPath, i)
			ops = append(ops, op{Op: "test", Path: p, Value: name}, op{Op: "remove", Path: p})
		}
	}
	return ops
}

// patch sends ops for obj through a copy, because the client decodes the
// response into the object it patches and obj may be a cached one. guarded
// says what the ops' tests guard, for the Conflict's message.
//
// The ops' "test" operations guard exactly what the patch relies on, so it
// neither overwrites a concurrent change unseen nor fails on an unrelated
// one (a status or label update does not conflict), unlike a merge patch
// with an optimistic lock on resourceVersion (controller-runtime's idiom),
// which conflicts on any change. A failed guard, which the API server
// answers with a bare 422, is returned as a 409 Conflict, as an
// optimistic-lock failure of an update would be, so that the reconcile
// retries on fresher state.
func patch(ctx context.Context, c client.Client, obj client.Object, ops []op, guarded string) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode JSON patch: %w", err)
	}
	cp, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy %s: %T.DeepCopyObject is not a client.Object", describe(obj), obj)
	}
	err = c.Patch(ctx, cp, client.RawPatch(types.JSONPatchType, data))
	if guardFailed(err) {
		return apierrors.NewConflict(resourceOf(c, obj), obj.GetName(),
			fmt.Errorf("%s changed since it was read; read it again and retry", guarded))
	}
	return err
}

// guardFailed reports whether err is the API server refusing to apply a
// JSON patch to the object it holds: 422 Unprocessable Entity without any
// cause, the server's answer to every failure of the JSON patch library
// (whose own message it drops). Validation failures are 422 too, but name
// their causes. The patches this package builds are well formed, so they
// fail to apply only where a "test" operation, or the index it tests, no
// longer matches the object: a concurrent change.
func guardFailed(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	return s.Code == http.StatusUnprocessableEntity && (s.Details == nil || len(s.Details.Causes) == 0)
}

// resourceOf names obj's resource for the Conflict error, as the API server
// would; it falls back to the kind if the client cannot map it.
func resourceOf(c client.Client, obj client.Object) schema.GroupResource {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}
	}
	m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}
	}
	return m.Resource.GroupResource()
}
