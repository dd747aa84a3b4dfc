package fleet

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/actas"
	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/internal/consistency"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
)

// clients are a member's clients beyond Client: made on first use, so a
// member that is only watched pays nothing for them, and dropped when the
// member is disengaged.
type clients struct {
	// write writes to the member's API server as the operator, recording
	// its writes for read-your-writes: what Client, CachedClient and
	// Writer write through.
	write client.Client
	// registerer is Options.Registerer, the writers'.
	registerer prometheus.Registerer

	mu sync.Mutex
	// cached is CachedClient's; nil until first asked for.
	cached client.Client
	// acting sends each request as the user its context carries (package
	// actas), with Client's HTTP connections and REST mapper: the client
	// under WriterAs. Nil until first asked for.
	acting client.Client
	// writers are Writer's and actingWriters WriterAs's, by controller
	// name, each acting writer shared by every user the controller acts
	// as. Both are nil once the member is disengaged.
	writers, actingWriters map[string]client.Client
	released               bool
}

// setClient sets the member's clients to write through cl, its client as
// the operator.
func (c *Cluster) setClient(cl client.Client, reg prometheus.Registerer) {
	c.clients.write = recording(cl, c.cache)
	c.clients.registerer = reg
	c.client = c.confined(c.clients.write)
}

// recording returns c recording its writes inside a reconcile for
// read-your-writes against ca, the member's cache, as the manager's
// clients record theirs against its cache.
func recording(c client.Client, ca *cache.Cache) client.Client {
	return consistency.NewClient(c, cache.Internal(ca, cacheaccess.Key{}))
}

// confined returns c confined to the member's namespace, if it has one.
func (c *Cluster) confined(cl client.Client) client.Client {
	if c.member.Namespace == "" {
		return cl
	}
	return client.NewNamespacedClient(cl, c.member.Namespace)
}

// CachedClient returns a client of the member that reads (Get, List) the
// types registered with the fleet from the member's cache, copying each
// object into the caller's, and writes through the member's API server as
// Client does: the member's manager.Manager.CachedClient, for
// controller-runtime code and helpers run unchanged (package
// github.com/opkit-dev/opkit/pkg/cachedclient says what its reads
// support). Reading a kind the member's cache does not hold is an error
// wrapping cache.ErrNotRegistered, reported as Options.UnregisteredReads
// says. A member confined to a namespace has one that refuses objects of
// other namespaces.
func (c *Cluster) CachedClient() client.Client {
	c.clients.mu.Lock()
	defer c.clients.mu.Unlock()
	return c.confined(c.cachedLocked())
}

// cachedLocked returns the cached client, unconfined. The caller holds
// c.clients.mu.
func (c *Cluster) cachedLocked() client.Client {
	if c.clients.cached == nil {
		c.clients.cached = cachedclient.New(cachedclient.NewReader(c.cache), c.clients.write)
	}
	return c.clients.cached
}

// Writer returns the client that the controller named controller reads
// and writes the member with, as manager.Manager.Writer does for one
// cluster: the member's CachedClient, which names controller as the field
// owner of each create, update, patch and apply, sends applies with
// ForceOwnership, skips the applies and patches that would change nothing
// by what the member's cache holds, and counts them in
// opkit_client_writes_total under controller with Options.Registerer
// (summed over the members). Its writes inside a reconcile are recorded
// for read-your-writes against the member's cache. The same name returns
// the same writer until the member is disengaged; it is safe for
// concurrent use. A member confined to a namespace has one that refuses
// objects of other namespaces.
//
// It panics if controller is empty: the name is a constant of the
// program, and a write needs a field owner.
func (c *Cluster) Writer(controller string) client.Client {
	return c.writer(false, controller)
}

// WriterAs returns the member's writer of the controller named controller
// acting as user, as manager.Manager.WriterAs does for one cluster: the
// member's API server authorizes each request as user, by the member's
// RBAC, once it has checked that the operator's identity there may
// impersonate user.
//
//   - It writes as Writer does: controller as the field owner, skipped
//     applies and patches that would change nothing (a skipped write
//     does nothing for user), opkit_client_writes_total under controller,
//     and read-your-writes against the member's cache.
//   - It reads from the member's API server as user, never from the
//     member's cache, which is the operator's.
//   - A refusal is the member's API server's 403 (apierrors.IsForbidden);
//     a user without a name is refused before anything is sent.
//   - user replaces any impersonation the member's rest.Config holds.
//   - It holds nothing per user: every user shares the controller's one
//     acting writer and the member's HTTP connections.
//
// A member confined to a namespace has one that refuses objects of other
// namespaces. It panics if controller is empty, as Writer does.
func (c *Cluster) WriterAs(controller string, user rest.ImpersonationConfig) client.Client {
	return actas.Client(c.writer(true, controller), user)
}

// writer returns the member's writer of controller, acting as the user
// each request's context names if acting, made and kept the first time
// while the member is engaged.
func (c *Cluster) writer(acting bool, controller string) client.Client {
	if controller == "" {
		panic("fleet: Writer needs the controller's name, which names the field owner of its writes and labels its metrics")
	}
	cs := &c.clients
	cs.mu.Lock()
	defer cs.mu.Unlock()
	kept := &cs.writers
	if acting {
		kept = &cs.actingWriters
	}
	gone := c.goneLocked()
	if w, ok := (*kept)[controller]; ok {
		return w
	}
	under := c.cachedLocked()
	if acting {
		under = c.actingLocked()
	}
	w, err := cachedclient.NewWriter(under, cachedclient.WriterOptions{
		Controller: controller, Cache: cachedclient.NewReader(c.cache), Registerer: c.clients.registerer,
	})
	if err != nil {
		// New registered the metric already, so this cannot fail.
		panic(fmt.Sprintf("fleet: member cluster %q: %v", c.name, err))
	}
	w = c.confined(w)
	if gone {
		return w // not kept: the member has gone
	}
	if *kept == nil {
		*kept = map[string]client.Client{}
	}
	(*kept)[controller] = w
	return w
}

// actingLocked returns the acting client. The caller holds
// c.clients.mu.
func (c *Cluster) actingLocked() client.Client {
	if c.clients.acting != nil {
		return c.clients.acting
	}
	hc := &http.Client{Transport: actas.Transport(reachTransport{c: c, next: c.httpClient.Transport}), Timeout: c.httpClient.Timeout}
	cl, err := client.New(c.config, client.Options{Scheme: c.clients.write.Scheme(), Mapper: c.clients.write.RESTMapper(), HTTPClient: hc})
	if err != nil {
		// The member's own client was made with the same config, scheme
		// and mapper, so this cannot fail.
		panic(fmt.Sprintf("fleet: member cluster %q: make its acting client: %v", c.name, err))
	}
	c.clients.acting = recording(cl, c.cache)
	return c.clients.acting
}

// releaseClients drops the member's writers and clients once it is
// disengaged; a writer asked for later is made but not kept.
func (c *Cluster) releaseClients() {
	c.clients.mu.Lock()
	defer c.clients.mu.Unlock()
	c.dropClientsLocked()
}

// goneLocked reports whether the member has been disengaged, and if so
// drops its clients, should the fleet not have yet. The caller holds
// c.clients.mu.
func (c *Cluster) goneLocked() bool {
	if !c.clients.released && c.life.Err() == nil {
		return false
	}
	c.dropClientsLocked()
	return true
}

func (c *Cluster) dropClientsLocked() {
	c.clients.cached, c.clients.acting = nil, nil
	c.clients.writers, c.clients.actingWriters = nil, nil
	c.clients.released = true
}

// whileEngaged returns rt refusing, unsent, every request made once gone
// is closed (the member's life has ended): whoever holds a client of a
// member disengaged (its kubeconfig revoked, say), with whatever context,
// sends nothing more to it.
func whileEngaged(cluster string, gone <-chan struct{}, rt http.RoundTripper) http.RoundTripper {
	return engagedTransport{cluster: cluster, gone: gone, next: rt}
}

type engagedTransport struct {
	cluster string
	gone    <-chan struct{}
	next    http.RoundTripper
}

func (t engagedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-t.gone:
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, fmt.Errorf("cluster %q: %w", t.cluster, ErrNotEngaged)
	default:
		return t.next.RoundTrip(req)
	}
}

// WrappedTransport returns the transport it wraps, so that client-go can
// find the transports underneath (utilnet.CloseIdleConnectionsFor).
func (t engagedTransport) WrappedTransport() http.RoundTripper { return t.next }
