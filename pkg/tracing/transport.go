package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport returns a wrapper for rest.Config.Wrap (or any HTTP client)
// that makes a client span, named by verb and resource ("get
// configmaps", "patch mirrors/status"), for each request sent inside a
// traced context: the request's context must carry the parent span, as
// it does when a reconcile passes its ctx to the client. It also sends
// the span's W3C traceparent header, so that an API server with tracing
// on joins the trace. Requests with no span in their context (the
// informers' lists and watches, leader election) pass through untouched,
// so background traffic costs nothing and makes no root spans.
func Transport(tp trace.TracerProvider) func(http.RoundTripper) http.RoundTripper {
	tracer := tp.Tracer(ScopeName)
	return func(rt http.RoundTripper) http.RoundTripper {
		return &transport{next: rt, tracer: tracer}
	}
}

type transport struct {
	next   http.RoundTripper
	tracer trace.Tracer
}

var _ http.RoundTripper = (*transport)(nil)

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.next.RoundTrip(req)
	}
	ri := parseRequest(req)
	ctx, span := t.tracer.Start(req.Context(), ri.verb+" "+ri.resource,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			VerbKey.String(ri.verb), ResourceKey.String(ri.resource), GroupKey.String(ri.group),
			attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Host),
			attribute.String("url.full", req.URL.String()),
		))
	defer span.End()
	if ri.namespace != "" {
		span.SetAttributes(NamespaceKey.String(ri.namespace))
	}
	if ri.name != "" {
		span.SetAttributes(NameKey.String(ri.name))
	}
	// RoundTrippers must not modify the caller's request.
	req = req.Clone(ctx)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		// As OpenTelemetry's HTTP conventions say for client spans: a 404
		// of a Get is an error here even when the reconcile expects it.
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}

// requestInfo is what a request's URL and method tell of its Kubernetes
// verb and object.
type requestInfo struct {
	verb, group, resource, namespace, name string
}

// parseRequest reads a Kubernetes API path: /api/v1/..., /apis/<group>/<version>/...,
// then optionally namespaces/<ns>/, then <resource>[/<name>[/<subresource>]].
// Other paths (discovery, /version) are named by their path.
func parseRequest(req *http.Request) requestInfo {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var ri requestInfo
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.group, parts = parts[1], parts[3:]
	default:
		return requestInfo{verb: strings.ToLower(req.Method), resource: req.URL.Path}
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		ri.namespace, parts = parts[1], parts[2:]
	}
	ri.resource = parts[0]
	if len(parts) >= 2 {
		ri.name = parts[1]
	}
	if len(parts) >= 3 {
		ri.resource += "/" + strings.Join(parts[2:], "/")
	}
	ri.verb = verb(req, ri.name != "")
	return ri
}

func verb(req *http.Request, named bool) string {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			return "watch"
		case named:
			return "get"
		default:
			return "list"
		}
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	default:
		return strings.ToLower(req.Method)
	}
}
