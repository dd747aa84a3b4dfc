package manager

import (
	"fmt"

	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/actas"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
)

// CachedClient returns a client that reads (Get, List) the kinds
// registered with the manager's cache from the cache, copying each object
// into the caller's, and writes through the API server like
// UncachedClient: for controller-runtime code and helpers such as
// controllerutil.CreateOrUpdate run unchanged (see "Which client" in the
// package documentation; a controller's own code uses Writer).
// UncachedClient, by contrast, reads from the API server. Its Update of a copy
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
	return m.writer(&m.writers, controller, m.CachedClient())
}

// WriterAs returns the writer of the controller named controller acting
// as user: the API server authorizes each of its requests as user, once it
// has checked that the operator may impersonate user (the RBAC verb
// impersonate on users, groups, or serviceaccounts for a ServiceAccount's
// user). Use it wherever the operator acts for someone else, so that it
// never does for them what they could not do themselves, whatever its own
// permissions and whatever its webhooks saw (docs/security.md).
//
//   - It writes as Writer does: controller as the field owner, skipped
//     applies and patches that would change nothing (a skipped write
//     changes nothing, so it does nothing for user; nor does it ask
//     whether user may still write), opkit_client_writes_total under
//     controller, and read-your-writes.
//   - It reads from the API server as user, never from the cache, which is
//     the operator's and may hold what user may not read.
//   - A refusal is the API server's 403 (apierrors.IsForbidden), which
//     names the user, verb and resource refused; a user without a name is
//     refused before anything is sent.
//   - user replaces any impersonation the manager's rest.Config holds
//     (Kubernetes does not nest them): the API server checks that the
//     config's own credentials may impersonate user.
//   - It holds nothing per user: every user shares the controller's one
//     writer and the manager's HTTP connections, and the client returned
//     is a few words. Make one per reconcile, or keep it.
//
// It panics if controller is empty, as Writer does.
func (m *Manager) WriterAs(controller string, user rest.ImpersonationConfig) client.Client {
	return actas.Client(m.writer(&m.actingWriters, controller, m.actingClient), user)
}

// ServiceAccount returns the user of the ServiceAccount namespace/name, for
// WriterAs. Acting as it needs the RBAC verb impersonate on
// serviceaccounts, by name, in namespace: a Role there that the
// namespace's owner binds to the operator is their consent.
func ServiceAccount(namespace, name string) rest.ImpersonationConfig {
	return actas.ServiceAccount(namespace, name)
}

// writer returns the writer of controller over c from writers, making and
// keeping it there the first time.
func (m *Manager) writer(writers *map[string]client.Client, controller string, c client.Client) client.Client {
	if controller == "" {
		panic("manager: Writer needs the controller's name, which names the field owner of its writes and labels its metrics")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := (*writers)[controller]; ok {
		return w
	}
	w, err := cachedclient.NewWriter(c, cachedclient.WriterOptions{
		Controller: controller, Cache: cachedclient.NewReader(m.cache), Registerer: m.registry,
	})
	if err != nil {
		// New registered the metric already, so this cannot fail.
		panic(fmt.Sprintf("manager: %v", err))
	}
	if *writers == nil {
		*writers = map[string]client.Client{}
	}
	(*writers)[controller] = w
	return w
}
