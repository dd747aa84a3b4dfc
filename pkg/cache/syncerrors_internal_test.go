package cache

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/net/http2"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// A watch stream ended by the HTTP/2 transport closing its connection is a
// connection error. The transport does so when a write on the connection
// fails: a cut found another request (a reconcile's write) being sent, and
// every stream on the connection then fails with "http2: client
// connection force closed via ClientConn.Close" before the read loop sees
// the cut. That error was counted as watch_failed (a cut in CI counted no
// connection error at all).
func TestStreamClosedWithItsConnectionIsAConnectionError(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsCfg.NextProtos = []string{http2.NextProtoTLS}
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	// client-go's transports speak HTTP/2 through x/net's Transport
	// (utilnet.SetTransportDefaults configures it), so the test does too.
	//lint:ignore SA1019 the operator's connections are x/net's, deprecated or not
	cc, err := (&http2.Transport{}).NewClientConn(conn)
	if err != nil {
		t.Fatal(err)
	}

	failed := make(chan error, 1)
	ctx := context.WithValue(context.Background(), streamFailedKey{}, func(err error) { failed <- err })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/configmaps?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := streamErrors{next: cc}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cc.Close() // as the transport does after a failed write
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the body read to its end after its connection closed")
	}
	select {
	case err := <-failed:
		if got := syncErrorClass("watch", err); got != imetrics.SyncErrorConnection {
			t.Errorf("a stream whose connection closed (%q) is class %q, want %q", err, got, imetrics.SyncErrorConnection)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed stream was not reported")
	}
}
