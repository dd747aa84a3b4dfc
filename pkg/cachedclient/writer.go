package cachedclient

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// WriterOptions configures NewWriter.
type WriterOptions struct {
	// Controller names the controller that writes: the field owner unless
	// FieldOwner is set, and the controller label of
	// opkit_client_writes_total. Required.
	Controller string
	// FieldOwner is the field manager of every create, update, patch and
	// apply (managedFields[].manager on the server). Defaults to
	// Controller.
	FieldOwner string
	// Cache reads the cached object that a write is compared with,
	// usually NewReader(mgr.Cache()). Defaults to none: every write is
	// sent.
	Cache crclient.Reader
	// Registerer receives opkit_client_writes_total. Defaults to none: writes
	// are not counted.
	Registerer prometheus.Registerer
}

// NewWriter returns a client.Client that writes through c with the
// controller's field owner, server-side applies with ForceOwnership, and
// skips the applies and patches that would change nothing (see the
// package documentation for the rules). Reads and every other call go to c
// as they are: give it the manager's CachedClient to read from the cache.
// Its methods are safe for concurrent use.
func NewWriter(c crclient.Client, opts WriterOptions) (crclient.Client, error) {
	if opts.Controller == "" {
		return nil, errors.New("new writer: WriterOptions.Controller is empty: set it to the controller's name, which names the field owner and labels the metrics")
	}
	owner := opts.FieldOwner
	if owner == "" {
		owner = opts.Controller
	}
	w := &writer{
		Client:  crclient.WithFieldOwner(c, owner),
		owner:   owner,
		cache:   opts.Cache,
		applied: map[objectKey]applied{},
	}
	if opts.Registerer != nil {
		writes, err := imetrics.NewClientWrites(opts.Registerer)
		if err != nil {
			return nil, fmt.Errorf("new writer for %s: %w", opts.Controller, err)
		}
		w.count = func(verb, result string) { writes.WithLabelValues(opts.Controller, verb, result).Inc() }
		for _, verb := range []string{imetrics.VerbApply, imetrics.VerbPatch} {
			writes.WithLabelValues(opts.Controller, verb, imetrics.WriteSent)
			writes.WithLabelValues(opts.Controller, verb, imetrics.WriteSkipped)
		}
	}
	return w, nil
}

// writer is the client NewWriter returns.
type writer struct {
	crclient.Client // c with the field owner
	owner           string
	cache           crclient.Reader           // nil: skip nothing
	count           func(verb, result string) // nil: count nothing

	mu sync.Mutex
	// applied holds, per object, this writer's last successful apply: an
	// entry is the object's uid and resourceVersion that apply returned
	// and the digest of its request. Entries of objects deleted elsewhere
	// stay (a recreated object has another uid, so they never cause a
	// skip); Delete through the writer drops them.
	applied map[objectKey]applied
}

var _ crclient.Client = (*writer)(nil)

// objectKey names an object, or its status subresource if status.
type objectKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	status          bool
}

type applied struct {
	uid             types.UID
	resourceVersion string
	digest          [32]byte
}

func (w *writer) record(verb, result string) {
	if w.count != nil {
		w.count(verb, result)
	}
}

// Apply server-side applies obj as the writer's field owner, with
// ForceOwnership unless opts say otherwise (&client.ApplyOptions{Force:
// ptr.To(false)}), or skips the request if it would change nothing. On a
// skip, obj is filled from the cached object, as a sent apply fills it
// from the response.
func (w *writer) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.ApplyOption) error {
	o := &crclient.ApplyOptions{FieldManager: w.owner, Force: new(true)}
	o.ApplyOptions(opts)
	return w.apply(ctx, obj, o, false, func() error { return w.Client.Apply(ctx, obj, o) })
}

// apply sends the apply of obj with o, unless this writer's last apply of
// the same request (of the object, or of its status if status) left the
// object as the cache holds it.
func (w *writer) apply(ctx context.Context, obj runtime.ApplyConfiguration, o *crclient.ApplyOptions, status bool, send func() error) error {
	req, reqErr := newApplyRequest(obj, o, status)
	if reqErr == nil && w.skipApply(ctx, obj, req) {
		w.record(imetrics.VerbApply, imetrics.WriteSkipped)
		return nil
	}
	err := send()
	w.record(imetrics.VerbApply, imetrics.WriteSent)
	if reqErr != nil || !req.skippable {
		return err
	}
	if err != nil {
		w.forget(req.key)
		return err
	}
	w.remember(req, obj)
	return nil
}

// Patch patches obj as the writer's field owner, or skips the request if
// it would change nothing. On a skip, obj is set to the cached object, as
// a sent patch sets it to the response.
func (w *writer) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.PatchOption) error {
	o := &crclient.PatchOptions{}
	o.ApplyOptions(opts)
	if w.skipPatch(ctx, obj, patch, len(o.DryRun) > 0) {
		w.record(imetrics.VerbPatch, imetrics.WriteSkipped)
		return nil
	}
	err := w.Client.Patch(ctx, obj, patch, opts...)
	w.record(imetrics.VerbPatch, imetrics.WriteSent)
	return err
}

// Status returns the writer of the status subresource, whose Patch skips
// what Patch skips.
func (w *writer) Status() crclient.SubResourceWriter { return w.SubResource("status") }

// SubResource returns the client of the subresource named name, whose
// Patch skips what Patch skips: a patch computed with client.MergeFrom
// from the cached object to a copy that the caller did not change is
// not sent.
func (w *writer) SubResource(name string) crclient.SubResourceClient {
	return &subResource{SubResourceClient: w.Client.SubResource(name), w: w, name: name}
}

// subResource is a subresource's client of a writer.
type subResource struct {
	crclient.SubResourceClient // with the writer's field owner
	w                          *writer
	name                       string
}

var _ crclient.SubResourceClient = (*subResource)(nil)

// Patch patches obj's subresource as the writer's field owner, or skips
// the request if it would change nothing. A patch with a body of its own
// (SubResourcePatchOptions.SubResourceBody) is always sent.
func (s *subResource) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.SubResourcePatchOption) error {
	o := &crclient.SubResourcePatchOptions{}
	o.ApplyOptions(opts)
	if o.SubResourceBody == nil && s.w.skipPatch(ctx, obj, patch, len(o.DryRun) > 0) {
		s.w.record(imetrics.VerbPatch, imetrics.WriteSkipped)
		return nil
	}
	err := s.SubResourceClient.Patch(ctx, obj, patch, opts...)
	s.w.record(imetrics.VerbPatch, imetrics.WriteSent)
	return err
}

// Apply server-side applies obj to the subresource as the writer's field
// owner, with ForceOwnership unless opts say otherwise, as the writer's
// Apply does. An apply of the status subresource is skipped when it would
// change nothing, by the rule of the writer's Apply, and fills obj from
// the cached object then; an apply of another subresource, or with a body
// of its own (SubResourceApplyOptions.SubResourceBody), is always sent.
func (s *subResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.SubResourceApplyOption) error {
	o := &crclient.SubResourceApplyOptions{ApplyOptions: crclient.ApplyOptions{FieldManager: s.w.owner, Force: new(true)}}
	o.ApplyOpts(opts)
	send := func() error { return s.SubResourceClient.Apply(ctx, obj, o) }
	if s.name != "status" || o.SubResourceBody != nil {
		err := send()
		s.w.record(imetrics.VerbApply, imetrics.WriteSent)
		return err
	}
	return s.w.apply(ctx, obj, &o.ApplyOptions, true, send)
}

// Delete deletes obj and forgets this writer's last applies of it and of
// its status.
func (w *writer) Delete(ctx context.Context, obj crclient.Object, opts ...crclient.DeleteOption) error {
	if gvk, err := w.GroupVersionKindFor(obj); err == nil {
		key := objectKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
		w.forget(key)
		key.status = true
		w.forget(key)
	}
	return w.Client.Delete(ctx, obj, opts...)
}

func (w *writer) forget(key objectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.applied, key)
}
