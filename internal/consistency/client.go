package consistency

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient returns a client that writes through c and, when the context
// of a write carries Writes (inside a reconcile of a controller with
// read-your-writes on), records each successful create, update, patch,
// apply and delete of a kind that cache holds, its status and other
// subresources included. Reads and DeleteAllOf go to c as they are.
// manager.Manager's clients are made with it.
func NewClient[W Write](c crclient.Client, cache Cache[W]) crclient.Client {
	return &recording[W]{Client: c, cache: cache}
}

// A Cache gives the Write of an object for its informers to catch up
// with: cacheaccess.Cache is one, with W its Write. obj is the object as the
// API server returned it from a write, or, when deleted, the object
// deleted.
type Cache[W Write] interface {
	Written(gvk schema.GroupVersionKind, obj metav1.Object, deleted bool) W
}

type recording[W Write] struct {
	crclient.Client
	cache Cache[W]
}

var _ crclient.Client = (*recording[Write])(nil)

// record adds the write of obj to ctx's Writes, if it carries any.
func (r *recording[W]) record(ctx context.Context, obj crclient.Object, deleted bool) {
	w := FromContext(ctx)
	if w == nil {
		return
	}
	gvk, err := r.GroupVersionKindFor(obj)
	if err != nil {
		return // not in the scheme: the cache cannot hold it either
	}
	w.Add(r.cache.Written(gvk, obj, deleted))
}

func (r *recording[W]) Create(ctx context.Context, obj crclient.Object, opts ...crclient.CreateOption) error {
	err := r.Client.Create(ctx, obj, opts...)
	if err == nil {
		r.record(ctx, obj, false)
	}
	return err
}

func (r *recording[W]) Update(ctx context.Context, obj crclient.Object, opts ...crclient.UpdateOption) error {
	err := r.Client.Update(ctx, obj, opts...)
	if err == nil {
		r.record(ctx, obj, false)
	}
	return err
}

func (r *recording[W]) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.PatchOption) error {
	err := r.Client.Patch(ctx, obj, patch, opts...)
	if err == nil {
		r.record(ctx, obj, false)
	}
	return err
}

func (r *recording[W]) Delete(ctx context.Context, obj crclient.Object, opts ...crclient.DeleteOption) error {
	err := r.Client.Delete(ctx, obj, opts...)
	if err == nil {
		r.record(ctx, obj, true)
	}
	return err
}

// Apply records the object the apply returned, which controller-runtime
// decodes into obj.
func (r *recording[W]) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.ApplyOption) error {
	err := r.Client.Apply(ctx, obj, opts...)
	if err == nil && FromContext(ctx) != nil {
		if o, gvk, ok := appliedObject(obj); ok {
			FromContext(ctx).Add(r.cache.Written(gvk, o, false))
		}
	}
	return err
}

// appliedObject reads the kind and metadata of an apply configuration
// from its JSON: apply configurations have no common Go interface for
// them.
func appliedObject(obj runtime.ApplyConfiguration) (*metav1.PartialObjectMetadata, schema.GroupVersionKind, bool) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, schema.GroupVersionKind{}, false
	}
	var o metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &o); err != nil || o.ResourceVersion == "" {
		return nil, schema.GroupVersionKind{}, false
	}
	return &o, o.GroupVersionKind(), true
}

func (r *recording[W]) Status() crclient.SubResourceWriter {
	return &recordingSub[W]{SubResourceWriter: r.Client.Status(), r: r}
}

func (r *recording[W]) SubResource(subResource string) crclient.SubResourceClient {
	return &recordingSub[W]{SubResourceWriter: r.Client.SubResource(subResource), reader: r.Client.SubResource(subResource), r: r}
}

// recordingSub records the writes of a subresource, which change the
// object's resourceVersion like any other write.
type recordingSub[W Write] struct {
	crclient.SubResourceWriter
	reader crclient.SubResourceReader // nil for Status
	r      *recording[W]
}

func (s *recordingSub[W]) Get(ctx context.Context, obj, subResource crclient.Object, opts ...crclient.SubResourceGetOption) error {
	return s.reader.Get(ctx, obj, subResource, opts...)
}

func (s *recordingSub[W]) Create(ctx context.Context, obj, subResource crclient.Object, opts ...crclient.SubResourceCreateOption) error {
	// A subresource create (a pod's eviction, a token) returns the
	// subresource, not the object: there is no version to wait for.
	return s.SubResourceWriter.Create(ctx, obj, subResource, opts...)
}

func (s *recordingSub[W]) Update(ctx context.Context, obj crclient.Object, opts ...crclient.SubResourceUpdateOption) error {
	err := s.SubResourceWriter.Update(ctx, obj, opts...)
	if err == nil {
		s.r.record(ctx, obj, false)
	}
	return err
}

func (s *recordingSub[W]) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil {
		s.r.record(ctx, obj, false)
	}
	return err
}

func (s *recordingSub[W]) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.SubResourceApplyOption) error {
	err := s.SubResourceWriter.Apply(ctx, obj, opts...)
	if err == nil && FromContext(ctx) != nil {
		if o, gvk, ok := appliedObject(obj); ok {
			FromContext(ctx).Add(s.r.cache.Written(gvk, o, false))
		}
	}
	return err
}
