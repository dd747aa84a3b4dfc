package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// TestMirrorTrace runs the sample operator's Mirror controller with
// tracing on, changes a Mirror's source, and prints the trace of the
// reconcile that change caused (go test -v -run TestMirrorTrace shows it;
// docs/tracing.md quotes it). Each API request span is a child of the
// reconcile span.
func TestMirrorTrace(t *testing.T) {
	crds, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{Paths: []string{"../../config/crd/bases"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Error(err)
		}
	})
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	home, target := env.Namespace(t), env.Namespace(t)
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	m, err := manager.New(env.Config(), manager.Options{
		Scheme: scheme, Metrics: manager.MetricsOptions{BindAddress: "0"}, Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mirror.Setup(m, mirror.Policy{}, controller.Options[reconcile.Request]{}); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	cl, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := &corev1.Namespace{}
	if err := cl.Get(ctx, client.ObjectKey{Name: target}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"trace-test": home, mirror.AcceptLabel(home): "true"}
	must(t, cl.Update(ctx, ns))
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "ca-bundle"}, Data: map[string]string{"ca.crt": "v1"}}
	must(t, cl.Create(ctx, src))
	must(t, cl.Create(ctx, &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "ca-bundle"},
		Spec: v1alpha1.MirrorSpec{
			Source:            v1alpha1.SourceRef{Kind: "ConfigMap", Name: "ca-bundle"},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"trace-test": home}},
		},
	}))
	eventually(t, "the copy", copied(ctx, cl, target, "v1"))
	// The change of the source, once the controller runs, is a live event
	// of known time.
	exp.Reset()
	src.Data["ca.crt"] = "v2"
	must(t, cl.Update(ctx, src))
	eventually(t, "the updated copy", copied(ctx, cl, target, "v2"))
	// The reconcile that wrote the new copy: every API request it made is
	// its child.
	var r tracetest.SpanStub
	eventually(t, "the span of the reconcile that wrote the copy", func() bool {
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.Name != "reconcile mirror" {
				continue
			}
			for _, c := range childrenOf(spans, s) {
				if v, _ := attr(c, tracing.ResourceKey); v.AsString() == "configmaps" && c.Name != "get configmaps" {
					r = s
					return true
				}
			}
		}
		return false
	})
	var out strings.Builder
	printTrace(&out, exp.GetSpans(), r, "")
	t.Logf("the trace of one Mirror reconcile:\n%s", out.String())
	checkAttributes(t, r, map[attribute.Key]string{
		tracing.ControllerKey: "mirror", tracing.NamespaceKey: home, tracing.NameKey: "ca-bundle", tracing.ResultKey: imetrics.ResultSuccess,
	})
	if _, ok := attr(r, tracing.EventChangedKey); !ok {
		t.Errorf("the reconcile span has no %s: the source's update queued it", tracing.EventChangedKey)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copied reports whether the copy of ca-bundle in ns holds version v.
func copied(ctx context.Context, cl client.Client, ns, v string) func() bool {
	return func() bool {
		cm := &corev1.ConfigMap{}
		return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ca-bundle"}, cm) == nil && cm.Data["ca.crt"] == v
	}
}
