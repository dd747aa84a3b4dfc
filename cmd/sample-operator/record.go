package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/opkit-dev/opkit/pkg/tracing"
)

// reconcileRecorder is the --record-reconciles test aid: a TracerProvider
// for the Mirror controller alone that, instead of tracing, appends one
// line when each reconcile span starts and one when it ends:
//
//	start <unix-nanos> <namespace>/<name> <pid>
//	end <unix-nanos> <namespace>/<name> <pid>
//
// The controller starts a reconcile's span after its gate admitted the
// key and ends it before the gate hears the reconcile is done, so a line
// pair brackets what the sharded mode promises never overlaps across
// replicas. Every line is one write to a file opened with O_APPEND, so
// several processes can share the file without tearing lines.
type reconcileRecorder struct {
	noop.TracerProvider
	f   *os.File
	pid int
}

// openRecorder opens (creating, appending to) the file of
// --record-reconciles.
func openRecorder(path string) (*reconcileRecorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the --record-reconciles file: %w", err)
	}
	return &reconcileRecorder{f: f, pid: os.Getpid()}, nil
}

func (r *reconcileRecorder) Close() error { return r.f.Close() }

func (r *reconcileRecorder) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{r: r}
}

// write appends one line; a failed write is reported on standard error,
// since a test reading the file would otherwise miss an interval silently.
func (r *reconcileRecorder) write(what, key string) {
	line := fmt.Sprintf("%s %d %s %d\n", what, time.Now().UnixNano(), key, r.pid)
	if _, err := r.f.WriteString(line); err != nil {
		fmt.Fprintf(os.Stderr, "sample-operator: --record-reconciles: %v\n", err)
	}
}

type recordingTracer struct {
	noop.Tracer
	r *reconcileRecorder
}

func (t recordingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !strings.HasPrefix(name, "reconcile ") {
		return ctx, noop.Span{}
	}
	var ns, n string
	cfg := trace.NewSpanStartConfig(opts...)
	for _, a := range cfg.Attributes() {
		switch a.Key {
		case tracing.Namespace:
			ns = a.Value.AsString()
		case tracing.Name:
			n = a.Value.AsString()
		}
	}
	key := ns + "/" + n
	t.r.write("start", key)
	return ctx, recordingSpan{r: t.r, key: key}
}

type recordingSpan struct {
	noop.Span
	r   *reconcileRecorder
	key string
}

func (s recordingSpan) End(...trace.SpanEndOption) { s.r.write("end", s.key) }
