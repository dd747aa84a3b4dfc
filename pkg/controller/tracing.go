package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// reconcileTracer makes a controller's reconcile spans (see package
// tracing). It remembers, per key, the span of a reconcile that queued the
// key again (an error's retry, a requeue), until the key's next reconcile
// links to it: at most one entry per queued key. Nil when tracing is off,
// so that a controller without a TracerProvider makes no calls at all.
type reconcileTracer[K comparable] struct {
	tracer   trace.Tracer
	spanName string
	name     attribute.KeyValue

	mu       sync.Mutex
	requeued map[K]requeuedBy
}

type requeuedBy struct {
	span   trace.SpanContext
	reason string
}

func newReconcileTracer[K comparable](tp trace.TracerProvider, name string) *reconcileTracer[K] {
	if tp == nil {
		return nil
	}
	return &reconcileTracer[K]{
		tracer:   tp.Tracer(tracing.ScopeName),
		spanName: "reconcile " + name,
		name:     tracing.ControllerKey.String(name),
		requeued: map[K]requeuedBy{},
	}
}

// start starts the span of a reconcile of key whose change happened at
// changed (zero if unknown), linked to the reconcile that queued it again
// if one did. The span starts at at, if not zero, else now.
func (t *reconcileTracer[K]) start(ctx context.Context, key K, id string, changed, at time.Time) (context.Context, trace.Span) {
	attrs := append(keyAttributes(key), t.name, tracing.ReconcileIDKey.String(id))
	if !changed.IsZero() {
		attrs = append(attrs, tracing.EventChangedKey.String(changed.UTC().Format(time.RFC3339)),
			tracing.EventLagKey.Float64(max(time.Since(changed), 0).Seconds()))
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if !at.IsZero() {
		opts = append(opts, trace.WithTimestamp(at))
	}
	t.mu.Lock()
	by, ok := t.requeued[key]
	delete(t.requeued, key)
	t.mu.Unlock()
	if ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: by.span, Attributes: []attribute.KeyValue{tracing.LinkReasonKey.String(by.reason)}}))
	}
	return t.tracer.Start(ctx, t.spanName, opts...)
}

// end records the outcome on span and ends it. requeued says whether the
// controller queued key again, so that its next reconcile links here.
func (t *reconcileTracer[K]) end(span trace.Span, key K, result string, after time.Duration, err error, requeued bool) {
	span.SetAttributes(tracing.ResultKey.String(result))
	if after > 0 {
		span.SetAttributes(tracing.RequeueAfterKey.Float64(after.Seconds()))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	if requeued {
		t.mu.Lock()
		t.requeued[key] = requeuedBy{span: span.SpanContext(), reason: result}
		t.mu.Unlock()
	}
	span.End()
}

// keyAttributes are the span attributes of key, as keyValues are the
// logger's.
func keyAttributes[K comparable](key K) []attribute.KeyValue {
	switch k := any(key).(type) {
	case reconcile.Request:
		if k.Namespace == "" {
			return []attribute.KeyValue{tracing.NameKey.String(k.Name)}
		}
		return []attribute.KeyValue{tracing.NamespaceKey.String(k.Namespace), tracing.NameKey.String(k.Name)}
	case fmt.Stringer:
		return []attribute.KeyValue{tracing.KeyKey.String(k.String())}
	default:
		return []attribute.KeyValue{tracing.KeyKey.String(fmt.Sprint(key))}
	}
}
