package webhook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apixv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// maxConversionBody is the size from which a conversion request is refused
// with 413: controller-runtime's admission handler's limit (its
// maxRequestSize, 7 MiB: two objects of the API server's 3 MiB and 1 MiB
// for the rest), so that a body of 7 MiB or more is refused on every path
// of the server. The API server converts a list one object at a time when
// a single review would be too large, so a limit of an admission request's
// size does not refuse what it sends.
const maxConversionBody = 7 << 20

// conversionBudget bounds the bytes of conversion request bodies being
// read or converted at once, by their Content-Length (maxConversionBody
// when not told): two requests of the largest size, or many small ones,
// with package bodybudget's lanes and read deadlines, so that callers who
// hold or trickle large bodies cannot starve the conversion of a Mirror.
// A review of seven 1 MiB Mirrors raised the heap in use by 17 MiB while
// it converted (the bytes, the decoded review, the source and converted
// objects), so eight at once raise it by about 40 MiB rather than 330
// MiB unbounded: well within the Deployment's 128 MiB with the rest of
// the operator (see docs/webhooks.md).
const conversionBudget = 2 * maxConversionBody

// ServeHTTP answers a ConversionReview at ConversionPath. It refuses a
// told Content-Length of maxConversionBody or more up front, and stops
// reading a longer or chunked body at the limit (413). It takes
// Content-Type application/json only, and a ConversionReview of
// apiextensions.k8s.io/v1 or v1beta1 with a request, else 400 naming what
// it got; it decodes a review once and streams the answer. A refused
// request (413, 400, 503) is logged at V(0) with its code.
func (c *converters) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := r.Context().Value(lookupKey{}).(**converters); ok {
		*p = c
		return
	}
	if r.ContentLength >= maxConversionBody {
		c.refuse(w, http.StatusRequestEntityTooLarge, tooLarge())
		return
	}
	// As controller-runtime's admission handler: 400, since a client that
	// sends another type sends a bad request rather than one the server
	// could take in another form (415).
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		c.refuse(w, http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct))
		return
	}
	release, err := c.inFlight.Admit(w, r)
	if err != nil {
		c.refuse(w, http.StatusServiceUnavailable, fmt.Errorf("too many conversions in flight: %w", err))
		return
	}
	defer release()
	review, code, err := c.readReview(w, r)
	if err != nil {
		c.refuse(w, code, err)
		return
	}
	c.serve(r.Context(), w, review)
}

func tooLarge() error {
	return fmt.Errorf("request entity is too large; limit is %d bytes", maxConversionBody)
}

// readReview reads and decodes the request's ConversionReview, once, and
// checks that it is one: on error, the status code to answer with.
func (c *converters) readReview(w http.ResponseWriter, r *http.Request) (*apix.ConversionReview, int, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, http.StatusBadRequest, errors.New("request body is empty")
	}
	defer r.Body.Close()
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxConversionBody-1), r.ContentLength)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, tooLarge()
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read ConversionReview: %w", err)
	}
	review := &apix.ConversionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decode ConversionReview: %w", err)
	}
	if err := checkReview(review); err != nil {
		return nil, http.StatusBadRequest, err
	}
	return review, 0, nil
}

// readBody reads all of body, into a buffer of its length when told.
func readBody(body io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(body)
	}
	b := make([]byte, length)
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkReview refuses what the API server would not send, such as an
// AdmissionReview, whose request decodes into a ConversionRequest without
// objects.
func checkReview(review *apix.ConversionReview) error {
	switch {
	case review.Kind != "ConversionReview" || !isReviewVersion(review.APIVersion):
		return fmt.Errorf("the body is a %s %s: want a ConversionReview of apiVersion %s or %s", review.APIVersion, review.Kind, apix.SchemeGroupVersion, apixv1beta1.SchemeGroupVersion)
	case review.Request == nil:
		return errors.New("the ConversionReview has no request")
	}
	return nil
}

// isReviewVersion reports whether v is an apiVersion of ConversionReview
// that a CRD's conversionReviewVersions may name; the answer has the
// request's.
func isReviewVersion(v string) bool {
	return v == apix.SchemeGroupVersion.String() || v == apixv1beta1.SchemeGroupVersion.String()
}

// refuse answers a request that is not converted.
func (c *converters) refuse(w http.ResponseWriter, code int, err error) {
	c.log.Error(err, "Conversion request refused", "code", code)
	http.Error(w, err.Error(), code)
}

// writeConverted streams a successful review's answer, one object at a
// time, so that the answer is never in memory whole; each object is
// dropped once written.
func writeConverted(w io.Writer, review *apix.ConversionReview, objs []runtime.Object) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	write := func(s string) { _, _ = bw.WriteString(s) }
	write(`{"kind":"ConversionReview","apiVersion":`)
	if err := enc.Encode(review.APIVersion); err != nil {
		return err
	}
	write(`,"response":{"uid":`)
	if err := enc.Encode(review.Request.UID); err != nil {
		return err
	}
	write(`,"result":{"metadata":{},"status":"Success"},"convertedObjects":[`)
	for i := range objs {
		if i > 0 {
			write(",")
		}
		if err := enc.Encode(objs[i]); err != nil {
			return err
		}
		objs[i] = nil
	}
	write("]}}\n")
	return bw.Flush()
}

// register is serve for a plain handler: it turns controller-runtime's
// panic on a second registration into ErrRegistered.
func register(srv crwebhook.Server, path string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); !ok || !strings.Contains(e.Error(), "duplicate path") {
				panic(r)
			}
			err = fmt.Errorf("webhook: register %s: %w", path, ErrRegistered)
		}
	}()
	srv.Register(path, h)
	return nil
}

// discard answers the in-process lookup request.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// handlerAt is mux.Handler, for a mux that may be nil.
func handlerAt(mux *http.ServeMux, r *http.Request) (http.Handler, string) {
	if mux == nil {
		return nil, ""
	}
	return mux.Handler(r)
}

// writeFailed answers a review whose conversion failed.
func writeFailed(w io.Writer, review *apix.ConversionReview) error {
	return json.NewEncoder(w).Encode(review)
}
