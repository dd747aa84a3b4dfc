package actas_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/internal/actas"
)

func TestTransport(t *testing.T) {
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
	}))
	defer srv.Close()
	rt := actas.Transport(http.DefaultTransport)
	send := func(u *rest.ImpersonationConfig) error {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		if u != nil {
			req = req.WithContext(actas.WithUser(req.Context(), u))
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	sa := actas.ServiceAccount("team-a", "mirror")
	tenant := rest.ImpersonationConfig{UserName: "alice", UID: "42", Groups: []string{"dev", "ops"}, Extra: map[string][]string{"scopes": {"a"}}}
	for _, u := range []*rest.ImpersonationConfig{nil, &sa, &tenant} {
		if err := send(u); err != nil {
			t.Fatal(err)
		}
	}
	want := []map[string][]string{
		{},
		{"Impersonate-User": {"system:serviceaccount:team-a:mirror"}},
		{"Impersonate-User": {"alice"}, "Impersonate-Uid": {"42"}, "Impersonate-Group": {"dev", "ops"}, "Impersonate-Extra-Scopes": {"a"}},
	}
	for i, h := range got {
		imp := map[string][]string{}
		for k, v := range h {
			if strings.HasPrefix(k, "Impersonate-") {
				imp[k] = v
			}
		}
		if diff := cmp.Diff(want[i], imp); diff != "" {
			t.Errorf("request %d: impersonation headers (-want +got):\n%s", i, diff)
		}
	}

	// A user without a name is refused before anything is sent: client-go
	// would send no user, and the request would go out unimpersonated.
	if err := send(&rest.ImpersonationConfig{Groups: []string{"system:masters"}}); !errors.Is(err, actas.ErrNoUserName) {
		t.Errorf("a user without a name: %v, want ErrNoUserName", err)
	}
	if len(got) != 3 {
		t.Errorf("the server saw %d requests, want 3", len(got))
	}
}
