package webhook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// maxConversionBody bounds a conversion request, as the API server bounds
// its own requests (3 MiB per object, and a list converts many).
const maxConversionBody = 64 << 20

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, fmt.Errorf("read conversion request: no body")
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, maxConversionBody))
	if err != nil {
		return nil, fmt.Errorf("read conversion request: %w", err)
	}
	return b, nil
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

// recorder keeps a response so that it can be logged before it is sent.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

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
