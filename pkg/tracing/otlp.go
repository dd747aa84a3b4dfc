package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// exporter sends spans as OTLP/HTTP protobuf. It is opkit's own, not
// go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp, because
// that one links gRPC, grpc-gateway and html/template into every operator
// (a collector package it imports carries the gRPC gateway), which makes
// an operator binary tens of MB larger (the sample operator's tests keep
// it out). The body it posts is a TracesData, which is the same
// message on the wire as the collector's ExportTraceServiceRequest.
type exporter struct {
	endpoint string
	headers  http.Header
	client   *http.Client
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// newExporter reads the OTEL_EXPORTER_OTLP_* variables: the traces
// endpoint (or the endpoint, with /v1/traces appended; defaults to
// http://localhost:4318), headers and timeout.
func newExporter() (*exporter, error) {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		base := cmpOr(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "http://localhost:4318")
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("OTLP traces endpoint %q: want an http:// or https:// URL", endpoint)
	}
	headers := http.Header{}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(os.Getenv(v), headers); err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
	}
	timeout := 10 * time.Second
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		if s := os.Getenv(v); s != "" {
			ms, err := strconv.Atoi(s)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", v, s)
			}
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return &exporter{endpoint: endpoint, headers: headers, client: &http.Client{Timeout: timeout}}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseHeaders adds the W3C-baggage-style "k1=v1,k2=v2" list to h.
func parseHeaders(s string, h http.Header) error {
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("header %q: want key=value", kv)
		}
		v, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("header %q: %w", kv, err)
		}
		h.Set(strings.TrimSpace(k), v)
	}
	return nil
}

// ExportSpans posts spans in one request.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	body, err := proto.Marshal(tracesData(spans))
	if err != nil {
		return fmt.Errorf("encode spans: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("export spans: %w", err)
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("export spans to %s: %w", e.endpoint, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("export spans to %s: %s: %s", e.endpoint, resp.Status, msg)
	}
	return nil
}

// Shutdown has nothing to release: each export is one request.
func (e *exporter) Shutdown(context.Context) error { return nil }

// tracesData groups spans by resource and instrumentation scope.
func tracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	td := &tracepb.TracesData{}
	type scopeKey struct {
		res   attribute.Distinct
		scope string
	}
	resources := map[attribute.Distinct]*tracepb.ResourceSpans{}
	scopes := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource().Equivalent()
		rs, ok := resources[res]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: keyValues(s.Resource().Attributes())}, SchemaUrl: s.Resource().SchemaURL()}
			resources[res] = rs
			td.ResourceSpans = append(td.ResourceSpans, rs)
		}
		sc := s.InstrumentationScope()
		key := scopeKey{res, sc.Name + "\x00" + sc.Version}
		ss, ok := scopes[key]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: sc.Name, Version: sc.Version}, SchemaUrl: sc.SchemaURL}
			scopes[key] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return td
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()), // the same numbers
		StartTimeUnixNano:      uint64(s.StartTime().UnixNano()),
		EndTimeUnixNano:        uint64(s.EndTime().UnixNano()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Flags:                  uint32(sc.TraceFlags()),
		Status:                 status(s.Status()),
	}
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		out.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			TimeUnixNano: uint64(e.Time.UnixNano()), Name: e.Name, Attributes: keyValues(e.Attributes),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), Flags: uint32(l.SpanContext.TraceFlags()),
		})
	}
	return out
}

// status maps OpenTelemetry Go's codes (Unset 0, Error 1, Ok 2) to
// OTLP's (Unset 0, Ok 1, Error 2).
func status(s sdktrace.Status) *tracepb.Status {
	switch s.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	default:
		return &tracepb.Status{}
	}
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	default:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
	}
}

func array[E any](es []E, fn func(E) attribute.Value) *commonpb.AnyValue {
	vals := make([]*commonpb.AnyValue, 0, len(es))
	for _, e := range es {
		vals = append(vals, value(fn(e)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
}
