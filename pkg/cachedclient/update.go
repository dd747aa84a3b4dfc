package cachedclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Update writes obj without deleting what the cache strips. A plain
// update replaces the whole object, so a copy read from the cache, which
// lacks managedFields and the last-applied annotation (and whatever a
// cache.TypeOptions.Transform drops), would remove from the API server
// what its reader never saw. So when the cache holds obj at obj's own
// resourceVersion, the object obj was read as, Update sends the
// difference between the two as a JSON merge patch, conditional on that
// resourceVersion as the update is: a field the cached copy and obj both
// lack is not in the patch and stays on the server as it is. Otherwise
// (no resourceVersion, an object the cache does not hold or holds at
// another version) it is a plain update.
//
// Why a patch: on controller-runtime, whose cache keeps every field, an
// update of a copy keeps kubectl apply's merge base; a plain update of
// opkit's stripped copy would delete it, and the next kubectl apply would
// no longer prune what its manifest dropped. Keeping the annotation in the
// cache instead would store a second copy of every object kubectl's
// client-side apply created, and would not help fields a Transform drops.
// The patch costs a copy of the cached object and two JSON encodings per
// Update, and no extra request; admission sees an UPDATE either way.
func (c *cached) Update(ctx context.Context, obj crclient.Object, opts ...crclient.UpdateOption) error {
	read, ok := c.readAs(ctx, obj)
	if !ok {
		return c.Client.Update(ctx, obj, opts...)
	}
	patch := crclient.MergeFromWithOptions(read, crclient.MergeFromWithOptimisticLock{})
	return c.Client.Patch(ctx, obj, patch, patchOptions(opts))
}

// KeepStripped returns writer with one change, for a client that reads
// from the API server: its Update of a copy read from the cache, which
// the reader (NewReader over the cache) holds at the copy's uid and
// resourceVersion, is sent as New's Update sends it, a JSON merge patch
// from the cached copy, so that it keeps on the API server what the cache
// stripped. Ported code that reads from a Lister or the cached client and
// writes back through an uncached client, as it could where
// controller-runtime's cache keeps every field, then deletes nothing.
//
// An object that carries managedFields or the last-applied annotation
// where the cached copy has none was read from the API server, not the
// cache: its Update is a plain update, which can delete those fields.
// Every other request goes to writer as it is.
func KeepStripped(reader crclient.Reader, writer crclient.Client) crclient.Client {
	return &keepStripped{Client: writer, cached: &cached{Client: writer, reader: reader}}
}

type keepStripped struct {
	crclient.Client
	cached *cached
}

func (k *keepStripped) Update(ctx context.Context, obj crclient.Object, opts ...crclient.UpdateOption) error {
	read, ok := k.cached.readAs(ctx, obj)
	if !ok || carriesStripped(obj, read) {
		return k.Client.Update(ctx, obj, opts...)
	}
	patch := crclient.MergeFromWithOptions(read, crclient.MergeFromWithOptimisticLock{})
	return k.Client.Patch(ctx, obj, patch, patchOptions(opts))
}

// carriesStripped reports whether obj has managedFields or the
// last-applied annotation where read, the cache's copy, has none.
func carriesStripped(obj, read crclient.Object) bool {
	if len(obj.GetManagedFields()) > 0 && len(read.GetManagedFields()) == 0 {
		return true
	}
	_, objHas := obj.GetAnnotations()[corev1.LastAppliedConfigAnnotation]
	_, readHas := read.GetAnnotations()[corev1.LastAppliedConfigAnnotation]
	return objHas && !readHas
}

// readAs returns a copy of the cached object obj was read as: the same
// uid and resourceVersion. It reports false when the cache holds no such
// object.
func (c *cached) readAs(ctx context.Context, obj crclient.Object) (crclient.Object, bool) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return nil, false
	}
	read, ok := obj.DeepCopyObject().(crclient.Object)
	if !ok {
		return nil, false
	}
	if err := consult(ctx, c.reader, crclient.ObjectKeyFromObject(obj), read); err != nil {
		return nil, false
	}
	if read.GetUID() != obj.GetUID() || read.GetResourceVersion() != rv {
		return nil, false
	}
	// The patch is the difference in fields; the kind is not one.
	read.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return read, true
}

// patchOptions are the options of an update, for the patch that replaces it.
func patchOptions(opts []crclient.UpdateOption) *crclient.PatchOptions {
	u := &crclient.UpdateOptions{}
	u.ApplyOptions(opts)
	p := &crclient.PatchOptions{
		DryRun:                           u.DryRun,
		FieldManager:                     u.FieldManager,
		FieldValidation:                  u.FieldValidation,
		DisableReadYourWritesConsistency: u.DisableReadYourWritesConsistency,
	}
	if u.Raw != nil {
		p.Raw = &metav1.PatchOptions{
			DryRun:          u.Raw.DryRun,
			FieldManager:    u.Raw.FieldManager,
			FieldValidation: u.Raw.FieldValidation,
		}
	}
	return p
}
