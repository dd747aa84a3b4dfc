package cachedclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// applyRequest is what an apply would send, reduced to what deciding a
// skip needs.
type applyRequest struct {
	key    objectKey
	digest [32]byte // of the body, field manager and force
	// skippable is false for a dry run and for a body that carries a
	// resourceVersion: the caller asked the server to check it, and only
	// the server can.
	skippable bool
}

// objectMeta is the part of an object's JSON that names it.
type objectMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace       string    `json:"namespace"`
		Name            string    `json:"name"`
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
	} `json:"metadata"`
}

// newApplyRequest encodes obj as the apply request body does (JSON) and
// digests it with the options that change what the server does with it;
// status says it is sent to the status subresource.
func newApplyRequest(obj runtime.ApplyConfiguration, o *crclient.ApplyOptions, status bool) (applyRequest, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return applyRequest{}, err
	}
	var m objectMeta
	if err := json.Unmarshal(body, &m); err != nil {
		return applyRequest{}, err
	}
	gv, err := schema.ParseGroupVersion(m.APIVersion)
	if err != nil {
		return applyRequest{}, err
	}
	force := o.Force != nil && *o.Force
	h := sha256.New()
	h.Write(body)
	h.Write([]byte{0})
	h.Write([]byte(o.FieldManager))
	if force {
		h.Write([]byte{1})
	}
	req := applyRequest{
		key:       objectKey{gvk: gv.WithKind(m.Kind), namespace: m.Metadata.Namespace, name: m.Metadata.Name, status: status},
		skippable: len(o.DryRun) == 0 && m.Metadata.ResourceVersion == "" && m.Kind != "" && m.Metadata.Name != "",
	}
	h.Sum(req.digest[:0])
	return req, nil
}

// skipApply reports whether the apply req would change nothing, and if so
// fills obj from the cached object. It is certain when the cache holds the
// very object (same uid and resourceVersion) that this writer's last apply
// of the same request returned: server-side apply is idempotent, so
// applying it again changes neither a field nor its ownership. The cached
// managedFields, which the cache strips, are not needed for that.
//
// Anything else is sent: a first apply (one per object after each start
// of the process), a changed apply, an object someone else wrote since,
// an object the cache does not hold or has not caught up with, a dry run,
// and a body that carries a resourceVersion. Comparing field values alone
// would not be certain: with managedFields stripped, the cache cannot
// tell whether another manager's update has taken a field over, whose
// value the next apply must take back. Since the skip is decided against
// the cache, an apply that would undo someone else's write not yet cached
// waits for the informer to deliver it; for an object the controller
// watches (Owns), that event triggers the reconcile that sends it.
//
// The writer keeps one small entry (uid, resourceVersion and digest) per
// object it applied, dropped when it deletes the object.
func (w *writer) skipApply(ctx context.Context, obj runtime.ApplyConfiguration, req applyRequest) bool {
	if w.cache == nil || !req.skippable {
		return false
	}
	w.mu.Lock()
	last, ok := w.applied[req.key]
	w.mu.Unlock()
	if !ok || last.digest != req.digest {
		return false
	}
	cached, err := w.cached(ctx, req.key)
	if err != nil || cached.GetUID() != last.uid || cached.GetResourceVersion() != last.resourceVersion {
		return false
	}
	data, err := json.Marshal(cached)
	if err != nil {
		return false
	}
	return json.Unmarshal(data, obj) == nil
}

// cached returns a copy of the cached object key: typed if the scheme
// knows its kind, unstructured otherwise.
func (w *writer) cached(ctx context.Context, key objectKey) (crclient.Object, error) {
	var obj crclient.Object
	if o, err := w.Scheme().New(key.gvk); err == nil {
		if co, ok := o.(crclient.Object); ok {
			obj = co
		}
	}
	if obj == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(key.gvk)
		obj = u
	}
	err := consult(ctx, w.cache, crclient.ObjectKey{Namespace: key.namespace, Name: key.name}, obj)
	return obj, err
}

// remember records the uid and resourceVersion that the sent apply req
// returned into obj.
func (w *writer) remember(req applyRequest, obj runtime.ApplyConfiguration) {
	var m objectMeta
	data, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || m.Metadata.UID == "" || m.Metadata.ResourceVersion == "" {
		delete(w.applied, req.key)
		return
	}
	w.applied[req.key] = applied{uid: m.Metadata.UID, resourceVersion: m.Metadata.ResourceVersion, digest: req.digest}
}

// skipPatch reports whether patch is empty ({} for a merge or strategic
// merge patch, [] for a JSON patch) and the cache holds obj; if so it sets
// obj to the cached object. An empty patch changes nothing whatever the
// object's state on the server, so a stale cache cannot make the skip
// wrong; the cache is asked only so that a patch of an object that may not
// exist is sent, and fails there as it would without the writer.
// A dry run is always sent.
func (w *writer) skipPatch(ctx context.Context, obj crclient.Object, patch crclient.Patch, dryRun bool) bool {
	if w.cache == nil || dryRun || !emptyPatch(obj, patch) {
		return false
	}
	cp, ok := obj.DeepCopyObject().(crclient.Object)
	if !ok || consult(ctx, w.cache, crclient.ObjectKeyFromObject(obj), cp) != nil {
		return false
	}
	out, in := reflect.ValueOf(obj), reflect.ValueOf(cp)
	if out.Kind() != reflect.Pointer || in.Type() != out.Type() {
		return false
	}
	out.Elem().Set(in.Elem())
	return true
}

// emptyPatch reports whether patch, computed against obj, changes nothing.
func emptyPatch(obj crclient.Object, patch crclient.Patch) bool {
	var empty string
	switch patch.Type() {
	case types.MergePatchType, types.StrategicMergePatchType:
		empty = "{}"
	case types.JSONPatchType:
		empty = "[]"
	default: // an apply patch sets ownership: never empty
		return false
	}
	data, err := patch.Data(obj)
	if err != nil {
		return false
	}
	return string(bytes.TrimSpace(data)) == empty
}
