package main

import (
	"net/http"
	"net/url"
	"testing"
)

// Lists and streaming lists of a collection count; gets of an object,
// plain watches, writes and discovery do not.
func TestWholeState(t *testing.T) {
	for _, tt := range []struct {
		method, url string
		want        string
		ok          bool
	}{
		{"GET", "/api/v1/configmaps?limit=500", "configmaps", true},
		{"GET", "/api/v1/namespaces/a/configmaps", "configmaps", true},
		{"GET", "/api/v1/namespaces", "namespaces", true},
		{"GET", "/apis/samples.opkit.dev/v1alpha1/mirrors?watch=true&sendInitialEvents=true&allowWatchBookmarks=true", "samples.opkit.dev/mirrors", true},
		{"GET", "/api/v1/secrets?watch=true&resourceVersion=12", "", false},
		{"GET", "/api/v1/namespaces/a", "", false},
		{"GET", "/api/v1/namespaces/a/configmaps/m", "", false},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "", false},
		{"POST", "/api/v1/namespaces/a/configmaps", "", false},
		{"GET", "/api/v1", "", false},
		{"GET", "/apis/samples.opkit.dev/v1alpha1", "", false},
		{"GET", "/version", "", false},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := wholeState(&http.Request{Method: tt.method, URL: u})
		if got != tt.want || ok != tt.ok {
			t.Errorf("wholeState(%s %s) = %q, %v; want %q, %v", tt.method, tt.url, got, ok, tt.want, tt.ok)
		}
	}
}
