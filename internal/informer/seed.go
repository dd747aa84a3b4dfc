package informer

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgofeatures "k8s.io/client-go/features"
)

// ListFunc lists as a ListerWatcher's ListWithContext does.
type ListFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// Snapshot returns the objects the store holds and the resource version
// they are the state of: every event of the informer's list and watch up
// to rv has been stored, and none after it. The two are read under one
// lock, so they agree however the informer is storing meanwhile. rv is
// empty when the informer cannot tell: before it has synced, or without
// client-go's AtomicFIFO feature (its store then learns no resource
// version).
func (i *Informer) Snapshot() (objs []any, rv string) {
	if !i.HasSynced() || !clientgofeatures.FeatureGates().Enabled(clientgofeatures.AtomicFIFO) {
		return nil, ""
	}
	s := i.indexer
	s.mu.RLock()
	defer s.mu.RUnlock()
	objs = make([]any, 0, s.lenLocked())
	for ns, names := range s.byNS {
		for name, obj := range names {
			objs = append(objs, s.unpack(objKey{ns, name}, obj))
		}
	}
	return objs, s.rv
}

// SetFirstList has list answer the informer's first list in place of its
// ListerWatcher, so that a caller that holds most of the objects already
// (another informer's Snapshot) lists only the rest. The list list returns
// must be the whole state at its resource version, which the informer
// then watches from. If list fails, the informer lists through its
// ListerWatcher instead; later lists (after a watch that failed) always
// do. An informer with a first list lists rather than streams its lists
// (client-go's WatchListClient), as for a ListerWatcher that cannot
// stream. Before Run only: afterwards it returns an error and changes
// nothing.
func (i *Informer) SetFirstList(list ListFunc) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return errors.New("informer: set first list: the informer has started")
	}
	i.firstList = list
	return nil
}

// takeFirstList returns the first list, once, or nil.
func (i *Informer) takeFirstList() ListFunc {
	i.mu.Lock()
	defer i.mu.Unlock()
	list := i.firstList
	i.firstList = nil
	return list
}

// hasFirstList reports whether a first list was set.
func (i *Informer) hasFirstList() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.firstList != nil
}
