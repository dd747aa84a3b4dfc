package tracing_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/opkit-dev/opkit/pkg/tracing"
)

func TestTransport(t *testing.T) {
	var traceparents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	hc := &http.Client{Transport: tracing.Transport(tp)(http.DefaultTransport)}
	ctx, parent := tp.Tracer("test").Start(t.Context(), "reconcile test")

	for _, tt := range []struct {
		method, path string
		want         string // span name
		attrs        map[attribute.Key]string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/ca", "get configmaps",
			map[attribute.Key]string{tracing.VerbKey: "get", tracing.ResourceKey: "configmaps", tracing.GroupKey: "", tracing.NamespaceKey: "ns", tracing.NameKey: "ca"}},
		{"GET", "/api/v1/namespaces/ns/configmaps", "list configmaps", map[attribute.Key]string{tracing.NamespaceKey: "ns"}},
		{"GET", "/api/v1/configmaps?watch=true", "watch configmaps", nil},
		{"POST", "/apis/samples.opkit.dev/v1alpha1/namespaces/ns/mirrors", "create mirrors", map[attribute.Key]string{tracing.GroupKey: "samples.opkit.dev"}},
		{"PATCH", "/apis/samples.opkit.dev/v1alpha1/namespaces/ns/mirrors/m/status", "patch mirrors/status", map[attribute.Key]string{tracing.NameKey: "m"}},
		{"PUT", "/api/v1/namespaces/team-a", "update namespaces", map[attribute.Key]string{tracing.NameKey: "team-a"}},
		{"PUT", "/api/v1/namespaces/team-a/finalize", "update namespaces/finalize", map[attribute.Key]string{tracing.NameKey: "team-a"}},
		{"DELETE", "/api/v1/namespaces/ns/secrets/s", "delete secrets", nil},
		{"DELETE", "/api/v1/namespaces/ns/secrets", "deletecollection secrets", nil},
		{"GET", "/api/v1/namespaces/ns/pods/missing", "get pods", map[attribute.Key]string{"http.response.status_code": "404"}},
		{"GET", "/version", "get /version", nil},
	} {
		exp.Reset()
		req, err := http.NewRequestWithContext(ctx, tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Errorf("%s %s: %d spans, want 1", tt.method, tt.path, len(spans))
			continue
		}
		s := spans[0]
		if s.Name != tt.want || s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s %s: span %q with parent %v, want %q with parent %v", tt.method, tt.path, s.Name, s.Parent.SpanID(), tt.want, parent.SpanContext().SpanID())
		}
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value.String()
		}
		for k, v := range tt.attrs {
			if got[k] != v {
				t.Errorf("%s %s: %s = %q, want %q", tt.method, tt.path, k, got[k], v)
			}
		}
		if want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"; traceparents[len(traceparents)-1] != want {
			t.Errorf("%s %s: traceparent %q, want %q", tt.method, tt.path, traceparents[len(traceparents)-1], want)
		}
	}
	parent.End()

	// Outside a trace (an informer's watch), no span and no header.
	exp.Reset()
	resp, err := hc.Get(srv.URL + "/api/v1/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff(0, len(exp.GetSpans())); diff != "" || traceparents[len(traceparents)-1] != "" {
		t.Errorf("a request outside a trace made spans %v and sent traceparent %q, want none", exp.GetSpans(), traceparents[len(traceparents)-1])
	}
}
