package cache

import "net/http"

// uncompressed returns hc with a transport that asks the API server for
// responses as they are, not gzipped, sharing hc's connections: the
// informers' lists and watches go through it. Between an operator and its
// API server, on a cluster's network, compression costs both more CPU
// than the bytes it saves take to send, as with kube-controller-manager
// and kube-scheduler, which turn it off for the same reason. A streaming
// list of many objects is gzipped by API servers with WatchListCompression
// (beta, on by default since 1.37) for any client that accepts it, which
// Go's transport does unless told otherwise: a cold start among 20,000
// ConfigMaps and Secrets spent half of its CPU in gunzip, and the API
// server more in gzip.
func uncompressed(hc *http.Client) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = identityEncoding{next: next}
	return &c
}

// identityEncoding asks for responses without content encoding, unless
// the request names an encoding itself.
type identityEncoding struct {
	next http.RoundTripper
}

func (t identityEncoding) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") != "" {
		return t.next.RoundTrip(req)
	}
	// A RoundTripper must not modify the request it is given.
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "identity")
	return t.next.RoundTrip(req)
}
