package actlog_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opkit-dev/opkit/internal/actlog"
)

// A reconcile and the requests it sends: the copy's patch is recorded, its
// read, the Lease renewal and the Event are not.
func ExampleFile() {
	dir, _ := os.MkdirTemp("", "actlog")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "acts")
	f, err := actlog.Open(path)
	if err != nil {
		panic(err)
	}
	// The API server's side, for the example: every request succeeds.
	wire := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	client := &http.Client{Transport: f.Transport(wire)}

	f.Start("ns/m", time.Now())
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/a/configmaps/m"},
		{http.MethodPatch, "/api/v1/namespaces/a/configmaps/m"},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/mirror-operator"},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/ns/events"},
	} {
		req, _ := http.NewRequest(r.method, "https://api.example"+r.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	f.End("ns/m")
	if err := f.Close(); err != nil {
		panic(err)
	}

	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fs := strings.Fields(line)
		fs[1], fs[len(fs)-1] = "<unix-nanos>", "<pid>" // vary from run to run
		fmt.Println(strings.Join(fs, " "))
	}
	// Output:
	// start <unix-nanos> ns/m <pid>
	// write <unix-nanos> PATCH /api/v1/namespaces/a/configmaps/m <pid>
	// end <unix-nanos> ns/m <pid>
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
