package manager

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	opkitclient "github.com/opkit-dev/opkit/pkg/client"
)

// CachedClient returns a client that reads (Get, List) the kinds
// registered with the manager's cache from the cache, copying each object
// into the caller's, and writes through the API server like Client: for
// controller-runtime code and helpers such as controllerutil.CreateOrUpdate.
// Client, by contrast, reads from the API server. Its Update of a copy
// read from the cache keeps on the API server what the cache strips
// (managedFields, the last-applied annotation): see package
// github.com/opkit-dev/opkit/pkg/client, "Write-backs keep what the
// cache strips". Reading a kind the cache
// does not hold is an error wrapping cache.ErrNotRegistered, logged once
// per kind, counted, and in tests reported even if the reader swallows it
// (cache.UnregisteredReadOptions); see package
// github.com/opkit-dev/opkit/pkg/client for what the reads support.
func (m *Manager) CachedClient() client.Client {
	return opkitclient.New(opkitclient.NewReader(m.cache), m.client)
}
