package crport

import (
	"context"
	"fmt"

	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// FieldIndexer is controller-runtime's client.FieldIndexer over mgr's
// cache, so a port's index code (an operator's SetupIndexes(
// mgr.GetFieldIndexer())) runs unchanged. IndexField registers obj's kind
// with the cache, as a controller watching it does, and adds an index
// named field; a List through mgr.CachedClient() with
// client.MatchingFields{field: value} reads it, within client.InNamespace
// when given and across the cached namespaces when not, as
// controller-runtime's cached client does. An index may be added before or
// after the manager starts.
//
// On a sharded manager (Options.Sharding) register the sharded kind
// yourself and use cache.Lister.AddIndex: this registers the whole kind.
func FieldIndexer(mgr *manager.Manager) crclient.FieldIndexer {
	return fieldIndexer{mgr.Cache()}
}

type fieldIndexer struct{ c *cache.Cache }

// IndexField implements client.FieldIndexer.
func (f fieldIndexer) IndexField(_ context.Context, obj crclient.Object, field string, extract crclient.IndexerFunc) error {
	l, err := cache.RegisterObject(f.c, obj, cache.TypeOptions{})
	if err != nil {
		return fmt.Errorf("crport: index %q: %w", field, err)
	}
	if err := l.AddIndex(field, func(o crclient.Object) []string { return extract(o) }); err != nil {
		return fmt.Errorf("crport: %w", err)
	}
	return nil
}
