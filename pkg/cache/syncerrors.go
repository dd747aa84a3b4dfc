package cache

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// decodeError marks an error decoding a response body whose request
// succeeded.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return "decode response: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// syncErrorClass returns the MetricSyncErrors class of a failed list or
// watch (verb "list" or "watch"). Precedence: the API server's answer
// first (a 403 is forbidden and a 410 expired, whatever the verb), then a
// body that did not decode, then the connection, then the verb.
func syncErrorClass(verb string, err error) string {
	var de *decodeError
	var jsonSyntax *json.SyntaxError
	var jsonType *json.UnmarshalTypeError
	switch {
	case apierrors.IsForbidden(err):
		return SyncErrorForbidden
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return SyncErrorExpired
	case errors.As(err, &de), errors.As(err, &jsonSyntax), errors.As(err, &jsonType),
		runtime.IsNotRegisteredError(err), runtime.IsMissingKind(err), runtime.IsMissingVersion(err):
		return SyncErrorDecode
	case isConnectionError(err):
		return SyncErrorConnection
	case verb == "watch":
		return SyncErrorWatch
	default:
		return SyncErrorList
	}
}

func isConnectionError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.As(err, &ne) || errors.As(err, &ue)
}
