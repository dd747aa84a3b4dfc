package metricsauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/opkit-dev/opkit/internal/metricsauth"
)

// The handler asks the API server about a token once per TTL; a stranger
// gets 401, a user without RBAC 403.
func ExampleNew() {
	api := newAPIServer() // a fake clientset; the manager passes its own
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "metrics") })
	h := metricsauth.New(api, metrics, metricsauth.Options{})
	for _, token := range []string{"good", "good", "forged", "other"} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(token, w.Code)
	}
	fmt.Println("TokenReviews:", api.tokenReviews.Load())
	// Output:
	// good 200
	// good 200
	// forged 401
	// other 403
	// TokenReviews: 3
}
