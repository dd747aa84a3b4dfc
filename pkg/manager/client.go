package manager

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	opkitclient "github.com/opkit-dev/opkit/pkg/client"
)

// CachedClient returns a client that reads (Get, List) the kinds
// registered with the manager's cache from the cache, copying each object
// into the caller's, and writes through the API server like Client: for
// controller-runtime code and helpers such as controllerutil.CreateOrUpdate.
// Client, by contrast, reads from the API server. Reading a kind the cache
// does not hold is an error wrapping cache.ErrNotRegistered; see package
// github.com/opkit-dev/opkit/pkg/client for what the reads support.
func (m *Manager) CachedClient() client.Client {
	return opkitclient.New(opkitclient.NewReader(m.cache), m.client)
}
