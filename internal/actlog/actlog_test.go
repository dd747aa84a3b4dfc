package actlog

import "testing"

// Every write is recorded but the election's and the Events', whatever an
// object is named.
func TestIsWrite(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/namespaces/a/configmaps/m", false},
		{"HEAD", "/api/v1/namespaces/a/configmaps/m", false},
		{"POST", "/api/v1/namespaces/a/configmaps", true},
		{"PUT", "/api/v1/namespaces/a/configmaps/m", true},
		{"PATCH", "/apis/mirror.opkit.dev/v1alpha1/namespaces/a/mirrors/m/status", true},
		{"DELETE", "/api/v1/namespaces/a/secrets/s", true},
		{"PATCH", "/api/v1/namespaces/a", true},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", false},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/a/leases", false},
		{"POST", "/api/v1/namespaces/a/events", false},
		{"PATCH", "/api/v1/namespaces/a/events/e", false},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", false},
		// Objects named like the resources left out are written all the same.
		{"PUT", "/api/v1/namespaces/a/configmaps/events", true},
		{"PUT", "/api/v1/namespaces/leases/configmaps/m", true},
		{"PUT", "/apis/example.com/v1/namespaces/a/leases/l", true},
	} {
		if got := isWrite(tt.method, tt.path); got != tt.want {
			t.Errorf("isWrite(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}
