package cache

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// decodeError marks an error decoding a response body whose request
// succeeded.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return "decode response: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// Errors are classified here, in the list and watch wrapper and the watch
// body, not in an informer's WatchErrorHandler: in client-go v0.37 that
// handler sees only errors the wrapper has seen already (a failed list, a
// watch that cannot be reopened), since a failed streaming list falls back
// to a list silently and an error inside a watch stream ends the watch
// without reaching it.

// syncErrorClass returns the opkit_cache_sync_errors_total class of a failed list or
// watch (verb "list" or "watch"). Precedence: the API server's answer
// first (a 403 is forbidden and a 410 expired, whatever the verb), then a
// body that did not decode, then the connection, then the verb.
func syncErrorClass(verb string, err error) string {
	var de *decodeError
	var jsonSyntax *json.SyntaxError
	var jsonType *json.UnmarshalTypeError
	switch {
	case apierrors.IsForbidden(err):
		return imetrics.SyncErrorForbidden
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return imetrics.SyncErrorExpired
	case errors.As(err, &de), errors.As(err, &jsonSyntax), errors.As(err, &jsonType),
		runtime.IsNotRegisteredError(err), runtime.IsMissingKind(err), runtime.IsMissingVersion(err):
		return imetrics.SyncErrorDecode
	case isConnectionError(err):
		return imetrics.SyncErrorConnection
	case verb == "watch":
		return imetrics.SyncErrorWatch
	default:
		return imetrics.SyncErrorList
	}
}

func isConnectionError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.As(err, &ne) || errors.As(err, &ue) || isHTTP2ConnectionClosed(err)
}

// http2ConnectionClosed are the errors, unexported, with which the HTTP/2
// transport (net/http's and golang.org/x/net/http2's alike) ends every
// stream of a connection it closes itself: once a write on the connection
// fails (a cut found another request being sent, and its streams fail with
// this before the read loop sees the cut), or once a health-check ping
// goes unanswered.
var http2ConnectionClosed = []string{
	"http2: client connection force closed via ClientConn.Close",
	"http2: client connection lost",
}

func isHTTP2ConnectionClosed(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if slices.Contains(http2ConnectionClosed, err.Error()) {
			return true
		}
	}
	return false
}

// streamFailedKey is the context key under which a watch request carries
// the function to call if its response stream fails midway.
type streamFailedKey struct{}

// streamErrors is the transport of the cache's list and watch clients with
// metrics on: it hands the body of each watch response whose request
// carries a streamFailedKey function a reader that calls it with the first
// read error other than the stream's end (a connection reset or cut
// midway), unless the watch was stopped first. The informer itself only
// sees such a watch end, as if the API server had ended it.
type streamErrors struct{ next http.RoundTripper }

func (t streamErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if f, ok := req.Context().Value(streamFailedKey{}).(func(error)); ok {
		resp.Body = &watchedBody{ReadCloser: resp.Body, failed: f}
	}
	return resp, nil
}

type watchedBody struct {
	io.ReadCloser
	failed func(error)
	closed atomic.Bool // Close was called: later read errors are its doing
	once   sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !b.closed.Load() && !errors.Is(err, context.Canceled) {
		b.once.Do(func() { b.failed(err) })
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

// withStreamErrors returns hc with a transport that reports failed watch
// streams (see streamErrors), sharing hc's connections.
func withStreamErrors(hc *http.Client) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = streamErrors{next: next}
	return &c
}
