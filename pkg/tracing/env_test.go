package tracing_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

func TestFromEnvOff(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"nothing set", nil},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tp, shutdown, err := tracing.FromEnv(t.Context())
			if err != nil || tp != nil {
				t.Errorf("FromEnv = %v, %v; want no provider and no error", tp, err)
			}
			if err := shutdown(t.Context()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
}

func TestFromEnvUnsupported(t *testing.T) {
	for _, tt := range []struct{ key, value string }{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(tt.key, tt.value)
			tp, _, err := tracing.FromEnv(t.Context())
			if !errors.Is(err, tracing.ErrUnsupportedExporter) || tp != nil {
				t.Errorf("FromEnv = %v, %v; want an error wrapping ErrUnsupportedExporter", tp, err)
			}
		})
	}
}

// TestFromEnvOTLP sends a reconcile's span to an OTLP/HTTP receiver that
// OTEL_EXPORTER_OTLP_ENDPOINT names.
func TestFromEnvOTLP(t *testing.T) {
	recv := &receiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "test-operator")
	tp, shutdown, err := tracing.FromEnv(t.Context())
	if err != nil || tp == nil {
		t.Fatalf("FromEnv = %v, %v; want a provider", tp, err)
	}
	// The first reconcile fails, so that the receiver gets an error
	// status, an exception event and the retry's link.
	reconciled := make(chan struct{})
	calls := 0
	r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		if calls++; calls == 1 {
			return reconcile.Done(), errors.New("broken")
		}
		close(reconciled)
		return reconcile.Done(), nil
	})
	c, err := controller.New("otlp", r, controller.Options[reconcile.Request]{TracerProvider: tp, Logger: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	keys := make(chan reconcile.Request, 1)
	keys <- reconcile.Request{Namespace: "ns", Name: "obj"}
	if err := c.Watch(source.NewChannel(keys)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	<-reconciled
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Shutdown flushes the batch to the receiver.
	sctx, scancel := context.WithTimeout(t.Context(), time.Minute)
	defer scancel()
	if err := shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	spans, service := recv.received(t)
	if service != "test-operator" {
		t.Errorf("service.name %q, want test-operator from OTEL_SERVICE_NAME", service)
	}
	if len(spans) != 2 || spans[0].GetName() != "reconcile otlp" || spans[1].GetName() != "reconcile otlp" {
		t.Fatalf("received %v, want two spans \"reconcile otlp\"", spans)
	}
	failed, retry := spans[0], spans[1]
	for i, want := range []string{"error", "success"} {
		got := map[string]string{}
		for _, kv := range spans[i].GetAttributes() {
			got[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for k, v := range map[string]string{"opkit.controller": "otlp", "k8s.namespace.name": "ns", "opkit.name": "obj", "opkit.result": want} {
			if got[k] != v {
				t.Errorf("span %d: attribute %s = %q, want %q (all: %v)", i, k, got[k], v, got)
			}
		}
	}
	if st := failed.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || st.GetMessage() != "broken" {
		t.Errorf("the failed reconcile's status %v, want ERROR \"broken\"", st)
	}
	if ev := failed.GetEvents(); len(ev) != 1 || ev[0].GetName() != "exception" {
		t.Errorf("the failed reconcile's events %v, want an exception", ev)
	}
	if l := retry.GetLinks(); len(l) != 1 || string(l[0].GetSpanId()) != string(failed.GetSpanId()) || string(l[0].GetTraceId()) != string(failed.GetTraceId()) {
		t.Errorf("the retry's links %v, want one to the failed reconcile", l)
	}
	if retry.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL || len(retry.GetTraceId()) != 16 || len(retry.GetSpanId()) != 8 || retry.GetEndTimeUnixNano() < retry.GetStartTimeUnixNano() {
		t.Errorf("the retry's kind, IDs or times are off: %v", retry)
	}
}

// receiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// ExportTraceServiceRequests posted to /v1/traces.
type receiver struct {
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
	errs []error
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.errs = append(r.errs, errors.New("unexpected "+req.Method+" "+req.URL.Path+" of "+req.Header.Get("Content-Type")))
		http.Error(w, "not OTLP traces", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(req.Body)
	msg := &collectortrace.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, msg)
	}
	if err != nil {
		r.errs = append(r.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.reqs = append(r.reqs, msg)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// received returns the spans received and the service.name of their
// resource.
func (r *receiver) received(t *testing.T) ([]*tracepb.Span, string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		t.Errorf("receiver: %v", r.errs)
	}
	var spans []*tracepb.Span
	var service string
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	return spans, service
}

// clearEnv unsets, for the test, the variables FromEnv reads that the
// machine may set.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	} {
		t.Setenv(k, "")
	}
}
