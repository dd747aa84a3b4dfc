package fleet

import (
	"net/http"
	"testing"

	"k8s.io/client-go/rest"
)

// client-go hands out http.DefaultClient itself for a config with no TLS,
// credentials or timeout: a member engaged with one must leave the
// process's default client as it was, or every http.Get in the process
// would go through the member's transport, and fail once it is gone.
func TestMemberLeavesTheDefaultHTTPClientAlone(t *testing.T) {
	before := http.DefaultClient.Transport
	f, err := New(Options{ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Engage(t.Context(), Member{Name: "bare", Config: &rest.Config{Host: "http://127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	if after := http.DefaultClient.Transport; after != before {
		t.Errorf("engaging a member changed http.DefaultClient's transport to %T", after)
	}
	// Its requests go through http.DefaultTransport (nothing listens).
	c, err := f.Cluster("bare")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.discovery.RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context()); err == nil {
		t.Error("a request to a member where nothing listens succeeded")
	}
}
