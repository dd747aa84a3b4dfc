package main

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/opkit-dev/opkit/internal/actlog"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// spanRecorder is the reconcile half of the --record-reconciles test aid
// (package actlog; the write half is actlog's transport on the manager's
// rest.Config): a TracerProvider for the Mirror controller alone that,
// instead of tracing, records when each reconcile span starts and ends.
//
// The controller starts a reconcile's span after its gate admitted the
// key and ends it before the gate hears the reconcile is done, so a line
// pair brackets what the sharded mode promises never overlaps across
// replicas.
type spanRecorder struct {
	noop.TracerProvider
	acts *actlog.File
}

func (r spanRecorder) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{acts: r.acts}
}

type recordingTracer struct {
	noop.Tracer
	acts *actlog.File
}

func (t recordingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !strings.HasPrefix(name, "reconcile ") {
		return ctx, noop.Span{}
	}
	var ns, n string
	cfg := trace.NewSpanStartConfig(opts...)
	for _, a := range cfg.Attributes() {
		switch a.Key {
		case tracing.NamespaceKey:
			ns = a.Value.AsString()
		case tracing.NameKey:
			n = a.Value.AsString()
		}
	}
	key := ns + "/" + n
	// The span starts when the controller let the reconcile start (past
	// a leader's fence), which a pause of the process may put well
	// before this call.
	at := cfg.Timestamp()
	if at.IsZero() {
		at = time.Now()
	}
	t.acts.Start(key, at)
	return ctx, recordingSpan{acts: t.acts, key: key}
}

type recordingSpan struct {
	noop.Span
	acts *actlog.File
	key  string
}

func (s recordingSpan) End(...trace.SpanEndOption) { s.acts.End(s.key) }
