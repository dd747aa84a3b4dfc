package actas

import (
	"context"
	"errors"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// ErrNoUserName refuses a request to act as a user without a name, which
// would otherwise go out as the operator itself.
var ErrNoUserName = errors.New("act as a user: the user has no name: refused, since the request would be sent as the operator itself")

// userKey is the context key of the user a request acts as.
type userKey struct{}

// WithUser returns ctx carrying user: a request that Transport sends with
// it goes out as user.
func WithUser(ctx context.Context, user *rest.ImpersonationConfig) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// userOf returns the user ctx carries, or nil.
func userOf(ctx context.Context) *rest.ImpersonationConfig {
	u, _ := ctx.Value(userKey{}).(*rest.ImpersonationConfig)
	return u
}

// Transport returns rt wrapped so that each request whose context carries
// a user (WithUser) is sent as that user, with client-go's impersonation
// headers. Headers already on the request (a rest.Config's own
// Impersonate, applied further down) do not override it: client-go's
// round tripper leaves a request that names a user alone.
func Transport(rt http.RoundTripper) http.RoundTripper { return roundTripper{next: rt} }

type roundTripper struct{ next http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	u := userOf(req.Context())
	switch {
	case u == nil:
		return t.next.RoundTrip(req)
	case u.UserName == "":
		// client-go would send no user header, and the request would go
		// out as the operator itself.
		return nil, ErrNoUserName
	}
	return transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.UserName, UID: u.UID, Groups: u.Groups, Extra: u.Extra,
	}, t.next).RoundTrip(req)
}

// WrappedTransport returns the transport Transport wraps, so that client-go
// can find the transports underneath (utilnet.CloseIdleConnectionsFor).
func (t roundTripper) WrappedTransport() http.RoundTripper { return t.next }

// ServiceAccount returns the user of the ServiceAccount namespace/name, as
// the API server names it. Acting as it, the API server adds its groups
// (system:serviceaccounts and system:serviceaccounts:<namespace>), and
// checks that the caller may impersonate serviceaccounts/name in
// namespace.
func ServiceAccount(namespace, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name}
}
