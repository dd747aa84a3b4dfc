package manager_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

var errBroken = errors.New("source is broken")

// TestTracing runs a Mirror-like controller (it copies each ConfigMap
// labeled as a source to "<name>-copy") under a manager with a
// TracerProvider, and reads the spans back from an in-memory exporter.
func TestTracing(t *testing.T) {
	ns := env.Namespace(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	m := newManager(t, ns, manager.Options{TracerProvider: tp})
	copier := reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var src corev1.ConfigMap
		if err := m.UncachedClient().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, &src); err != nil {
			return reconcile.Done(), fmt.Errorf("get source: %w", err)
		}
		switch src.Name {
		case "broken":
			return reconcile.Done(), errBroken
		case "later":
			return reconcile.RequeueAfter(time.Hour), nil
		}
		cp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src.Namespace, Name: src.Name + "-copy"}, Data: src.Data}
		if err := m.UncachedClient().Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Done(), fmt.Errorf("create copy: %w", err)
		}
		return reconcile.Done(), nil
	})
	sel := labels.SelectorFromSet(labels.Set{"role": "source"})
	if _, err := manager.NewController(m, "copier", copier,
		manager.For[*corev1.ConfigMap](nil, source.LabelSelector[*corev1.ConfigMap](sel))); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	// Objects created before the controller's source attaches come in its
	// initial list, whose change times are unknown: wait for a first
	// reconcile.
	for i, name := range []string{"probe", "ca", "broken", "later"} {
		if i == 1 {
			eventually(t, "the first reconcile", func() bool { return len(reconcileSpans(exp.GetSpans(), "probe")) == 1 })
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": "source"}}, Data: map[string]string{"k": "v"}}
		if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// "broken" is retried with backoff; its second reconcile links to its
	// first.
	eventually(t, "the reconciles' spans", func() bool {
		return len(reconcileSpans(exp.GetSpans(), "ca")) == 1 && len(reconcileSpans(exp.GetSpans(), "later")) == 1 &&
			len(reconcileSpans(exp.GetSpans(), "broken")) >= 2
	})
	spans := exp.GetSpans()

	t.Run("success", func(t *testing.T) {
		r := reconcileSpans(spans, "ca")[0]
		if r.Name != "reconcile copier" || r.SpanKind != trace.SpanKindInternal {
			t.Errorf("span %q of kind %v, want \"reconcile copier\", internal", r.Name, r.SpanKind)
		}
		want := map[attribute.Key]string{
			tracing.ControllerKey: "copier", tracing.NamespaceKey: ns, tracing.NameKey: "ca", tracing.ResultKey: imetrics.ResultSuccess,
		}
		checkAttributes(t, r, want)
		for _, k := range []attribute.Key{tracing.ReconcileIDKey, tracing.EventChangedKey, tracing.EventLagKey} {
			if _, ok := attr(r, k); !ok {
				t.Errorf("reconcile span has no %s: %v", k, r.Attributes)
			}
		}
		if changed, _ := attr(r, tracing.EventChangedKey); !strings.HasPrefix(changed.String(), time.Now().UTC().Format("2006-01-02")) {
			t.Errorf("%s = %s, want a time of today", tracing.EventChangedKey, changed.String())
		}
		children := childrenOf(spans, r)
		var names []string
		for _, c := range children {
			names = append(names, c.Name)
			if c.SpanKind != trace.SpanKindClient {
				t.Errorf("child %q is of kind %v, want client", c.Name, c.SpanKind)
			}
		}
		if diff := cmp.Diff([]string{"get configmaps", "create configmaps"}, names); diff != "" {
			t.Errorf("children of the reconcile span (-want +got):\n%s", diff)
		}
		if len(children) == 2 {
			checkAttributes(t, children[1], map[attribute.Key]string{
				tracing.VerbKey: "create", tracing.ResourceKey: "configmaps", tracing.NamespaceKey: ns, tracing.GroupKey: "",
			})
			if code, _ := attr(children[1], "http.response.status_code"); code.AsInt64() != 201 {
				t.Errorf("create's status code %v, want 201", code.String())
			}
		}
	})

	t.Run("error", func(t *testing.T) {
		rs := reconcileSpans(spans, "broken")
		first, second := rs[0], rs[1]
		checkAttributes(t, first, map[attribute.Key]string{tracing.ResultKey: imetrics.ResultError})
		if first.Status.Code != codes.Error || first.Status.Description != errBroken.Error() {
			t.Errorf("status %+v, want an Error with %q", first.Status, errBroken)
		}
		if len(first.Events) != 1 || first.Events[0].Name != "exception" {
			t.Errorf("events %+v, want the error recorded as an exception", first.Events)
		}
		if len(second.Links) != 1 || second.Links[0].SpanContext.SpanID() != first.SpanContext.SpanID() {
			t.Fatalf("the retry's links %+v, want one to the failed reconcile %v", second.Links, first.SpanContext.SpanID())
		}
		if reason := second.Links[0].Attributes; !slices.Contains(reason, tracing.LinkReasonKey.String(imetrics.ResultError)) {
			t.Errorf("link attributes %v, want %s=error", reason, tracing.LinkReasonKey)
		}
		if _, ok := attr(second, tracing.EventChangedKey); ok {
			t.Errorf("a retry has %s, want none: no change queued it", tracing.EventChangedKey)
		}
	})

	t.Run("requeue after", func(t *testing.T) {
		r := reconcileSpans(spans, "later")[0]
		checkAttributes(t, r, map[attribute.Key]string{tracing.ResultKey: imetrics.ResultRequeueAfter})
		if after, _ := attr(r, tracing.RequeueAfterKey); after.AsFloat64() != time.Hour.Seconds() {
			t.Errorf("%s = %v, want 3600", tracing.RequeueAfterKey, after.String())
		}
	})

	t.Run("no spans outside reconciles", func(t *testing.T) {
		// The informers' lists and watches carry no span, so make none.
		for _, s := range spans {
			if !strings.HasPrefix(s.Name, "reconcile ") && !s.Parent.IsValid() {
				t.Errorf("root span %q, want every API request span inside a reconcile", s.Name)
			}
		}
	})
}

// reconcileSpans returns the reconcile spans of the object named name, in
// the order they ended.
func reconcileSpans(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if v, ok := attr(s, tracing.NameKey); ok && strings.HasPrefix(s.Name, "reconcile ") && v.AsString() == name {
			out = append(out, s)
		}
	}
	return out
}

// childrenOf returns the spans whose parent is p, in the order they started.
func childrenOf(spans tracetest.SpanStubs, p tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.Parent.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	return out
}

func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func checkAttributes(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := attr(s, k); !ok || got.String() != v {
			t.Errorf("span %q: %s = %q (set: %v), want %q", s.Name, k, got.String(), ok, v)
		}
	}
}

// printTrace writes the spans of s's trace as a tree: each span's name,
// kind and attributes, then its children indented.
func printTrace(w io.Writer, spans tracetest.SpanStubs, s tracetest.SpanStub, indent string) {
	var attrs []string
	for _, kv := range s.Attributes {
		attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	fmt.Fprintf(w, "%s%s (%s, %s) %s\n", indent, s.Name, s.SpanKind, s.Status.Code, strings.Join(attrs, " "))
	for _, l := range s.Links {
		fmt.Fprintf(w, "%s  link to span %s %v\n", indent, l.SpanContext.SpanID(), l.Attributes)
	}
	for _, c := range childrenOf(spans, s) {
		printTrace(w, spans, c, indent+"  ")
	}
}
