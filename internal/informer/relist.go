package informer

import (
	toolscache "k8s.io/client-go/tools/cache"
)

// replaceAll replaces the store's objects with a relist's and delivers
// the difference as client-go does: a delete, with the last state held,
// for each object gone, then an update or add for each listed, in the
// list's order; then it resets the sampler. The caller holds delivering.
func (i *Informer) replaceAll(info toolscache.ReplacedAllInfo, isInInitialList bool) error {
	objs := make([]any, len(info.Objects))
	stamps := make([]stamp, len(info.Objects))
	timed := make([]bool, len(info.Objects))
	for j, obj := range info.Objects {
		objs[j], stamps[j], timed[j] = unwrap(obj)
	}
	olds := make([]any, len(objs))
	var gone []toolscache.DeletedFinalStateUnknown
	// An empty store, as at the first list, has nothing to compare.
	if held := i.indexer.ListKeys(); len(held) > 0 {
		listed := make(map[string]struct{}, len(objs))
		for _, obj := range objs {
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return toolscache.KeyError{Obj: obj, Err: err}
			}
			listed[key] = struct{}{}
		}
		for _, key := range held {
			if _, ok := listed[key]; ok {
				continue
			}
			old, _, _ := i.indexer.GetByKey(key)
			gone = append(gone, toolscache.DeletedFinalStateUnknown{Key: key, Obj: old})
		}
		for j, obj := range objs {
			olds[j], _, _ = i.indexer.Get(obj)
		}
	}
	if err := i.indexer.Replace(objs, info.ResourceVersion); err != nil {
		return err
	}
	for _, tomb := range gone {
		i.deliver(&event{kind: 'd', obj: tomb, untimed: !i.take()}, stamp{})
	}
	for j, obj := range objs {
		if olds[j] != nil {
			i.deliver(&event{kind: 'u', obj: obj, old: olds[j], untimed: !timed[j]}, stamps[j])
		} else {
			i.deliver(&event{kind: 'a', obj: obj, isInInitialList: isInInitialList, untimed: !timed[j]}, stamps[j])
		}
	}
	// A list is one burst, not a flood of changes: the events after it are
	// timed every one until a flood sets the stride again.
	i.samples.reset()
	return nil
}
