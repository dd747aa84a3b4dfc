package manager

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cachedclient"
)

// CachedClient returns a client that reads (Get, List) the kinds
// registered with the manager's cache from the cache, copying each object
// into the caller's, and writes through the API server like Client: for
// controller-runtime code and helpers such as controllerutil.CreateOrUpdate.
// Client, by contrast, reads from the API server. Its Update of a copy
// read from the cache keeps on the API server what the cache strips
// (managedFields, the last-applied annotation): see package
// github.com/opkit-dev/opkit/pkg/cachedclient, "Write-backs keep what the
// cache strips". Reading a kind the cache
// does not hold is an error wrapping cache.ErrNotRegistered, logged once
// per kind, counted, and in tests reported even if the reader swallows it
// (cache.UnregisteredReadOptions); see package
// github.com/opkit-dev/opkit/pkg/cachedclient for what the reads support.
func (m *Manager) CachedClient() client.Client {
	return cachedclient.New(cachedclient.NewReader(m.cache), m.client)
}

// Writer returns the client that the controller named controller reads
// and writes with: the manager's CachedClient, which names controller as
// the field owner of each create, update, patch and apply, sends applies
// with ForceOwnership, skips the applies and patches that would change
// nothing, and counts them in opkit_client_writes_total under controller (see
// package github.com/opkit-dev/opkit/pkg/cachedclient, "Writing"). Its
// writes are recorded for read-your-writes, as every write of the
// manager's clients is. The same name returns the same writer, which is
// safe for concurrent use.
//
// It panics if controller is empty: the name is a constant of the
// program, and a write needs a field owner.
func (m *Manager) Writer(controller string) client.Client {
	if controller == "" {
		panic("manager: Writer needs the controller's name, which names the field owner of its writes and labels its metrics")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.writers[controller]; ok {
		return w
	}
	w, err := cachedclient.NewWriter(m.CachedClient(), cachedclient.WriterOptions{
		Controller: controller, Cache: cachedclient.NewReader(m.cache), Registerer: m.registry,
	})
	if err != nil {
		// New registered the metric already, so this cannot fail.
		panic(fmt.Sprintf("manager: %v", err))
	}
	if m.writers == nil {
		m.writers = map[string]client.Client{}
	}
	m.writers[controller] = w
	return w
}
