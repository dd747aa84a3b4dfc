package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// env is the control plane shared by every test in this package.
var env *Environment

func TestMain(m *testing.M) {
	Main(m, Options{
		CRDDirs: []string{"testdata/crds"},
		Webhook: WebhookOptions{Paths: []string{"testdata/webhook"}, ConvertCRDs: []string{"gadgets.testenv.opkit.dev"}},
	}, func(e *Environment) { env = e })
}

func TestConfigMapRoundTrip(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	cms := env.Client().CoreV1().ConfigMaps(ns)

	created, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "greeting"},
		Data:       map[string]string{"hello": "world"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	got, err := cms.Get(ctx, "greeting", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"hello": "world"}, got.Data); diff != "" {
		t.Errorf("read back data (-want +got):\n%s", diff)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatalf("watch ConfigMaps: %v", err)
	}
	defer w.Stop()
	got.Data["hello"] = "opkit"
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update ConfigMap: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Modified || !ok || cm.Data["hello"] != "opkit" {
			t.Fatalf("watch event = %s %#v, want Modified with hello=opkit", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		// A generous bound: an event that never arrives must fail the test
		// rather than hang it. It measures nothing.
		t.Fatal("no watch event for the update")
	}
}

func TestCRDInstalled(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "testenv.opkit.dev", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "testenv.opkit.dev/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w"},
		"spec":       map[string]any{"size": int64(3)},
	}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Widget: %v", err)
	}
	got, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d, want 3", size)
	}
}

func TestNamespaceIsolated(t *testing.T) {
	var first string
	t.Run("a", func(t *testing.T) {
		first = env.Namespace(t)
		if _, err := env.Client().CoreV1().Namespaces().Get(t.Context(), first, metav1.GetOptions{}); err != nil {
			t.Fatalf("get own namespace: %v", err)
		}
	})
	t.Run("b", func(t *testing.T) {
		second := env.Namespace(t)
		if second == first {
			t.Fatalf("two tests got the same namespace %q", first)
		}
	})
	// After its test ended, the first namespace is being deleted (it stays
	// Terminating: there is no namespace controller) or gone.
	ns, err := env.Client().CoreV1().Namespaces().Get(t.Context(), first, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case ns.DeletionTimestamp == nil:
		t.Errorf("namespace %s was not deleted after its test", first)
	}
}

func TestStartBadCRDDir(t *testing.T) {
	_, err := Start(Options{CRDDirs: []string{"testdata/no-such-dir"}})
	if err == nil || !strings.Contains(err.Error(), `CRD path "testdata/no-such-dir"`) {
		t.Fatalf("Start with a missing CRD directory: err = %v, want one naming the path", err)
	}
}

// After RestartAPIServer the same client reaches the API server at the same
// address, over the same certificates, and finds what it wrote before. A
// watch left open, as an operator leaves one, does not hold the stop up.
func TestRestartAPIServer(t *testing.T) {
	ns := env.Namespace(t)
	cms := env.Client().CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	host := env.Config().Host
	start := time.Now()
	if err := env.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted kube-apiserver in %v", time.Since(start).Round(time.Millisecond))
	if got := env.Config().Host; got != host {
		t.Errorf("Host after the restart = %s, want %s", got, host)
	}
	if _, err := cms.Get(t.Context(), "before", metav1.GetOptions{}); err != nil {
		t.Errorf("get a ConfigMap written before the restart: %v", err)
	}
}

// The kubeconfig reaches the control plane as admin, as kubectl and
// clientcmd users load it.
func TestKubeconfigReachesTheControlPlane(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(t.Context(), metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Errorf("get the default namespace through the kubeconfig: %v", err)
	}
}

// Optional feature gates reach a kube-apiserver that knows them, which
// reports each gate's state in its kubernetes_feature_enabled metric, and
// survive a restart; one it does not know is left out, and a test that
// needs it skips, naming it. The package's shared control plane, started
// without gates, keeps the gate's default (off).
func TestFeatureGates(t *testing.T) {
	// ShardedListAndWatch (alpha, off by default) is known from 1.36;
	// APIServingWithRoutine (alpha, off) by every version opkit pins.
	gate := "ShardedListAndWatch"
	if _, known := env.FeatureGate(gate); !known {
		gate = "APIServingWithRoutine"
	}
	const unknown = "NoSuchFeatureGateInAnyVersion"
	if on, known := env.FeatureGate(gate); !known || on {
		t.Errorf("shared control plane (no FeatureGates): FeatureGate(%s) = %t, %t; want off and known", gate, on, known)
	}
	if got := featureEnabled(t, env, gate); got != "0" {
		t.Errorf("shared control plane (no FeatureGates): %s = %s, want 0", gate, got)
	}
	gated, err := Start(Options{OptionalFeatureGates: map[string]bool{gate: true, unknown: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gated.Stop(); err != nil {
			t.Error(err)
		}
	})
	if got := featureEnabled(t, gated, gate); got != "1" {
		t.Errorf("control plane started with %s=true: metric = %s, want 1", gate, got)
	}
	if diff := cmp.Diff(map[string]bool{gate: true}, gated.FeatureGates()); diff != "" {
		t.Errorf("FeatureGates() (-want +got):\n%s", diff)
	}
	if on, known := gated.FeatureGate(gate); !on || !known {
		t.Errorf("FeatureGate(%s) = %t, %t; want on and known", gate, on, known)
	}
	if _, known := gated.FeatureGate(unknown); known {
		t.Errorf("FeatureGate(%s): known, want unknown", unknown)
	}
	for name, want := range map[string]string{gate: "", unknown: "needs feature gate " + unknown + ", which kube-apiserver " + gated.ServerVersion() + " does not know"} {
		rec := &skipRecorder{TB: t}
		gated.RequireFeatureGate(rec, name)
		if rec.reason != want {
			t.Errorf("RequireFeatureGate(%s) skipped with %q, want %q", name, rec.reason, want)
		}
	}
	if err := gated.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if got := featureEnabled(t, gated, gate); got != "1" {
		t.Errorf("after RestartAPIServer: %s = %s, want 1", gate, got)
	}
}

// skipRecorder records a skip instead of skipping.
type skipRecorder struct {
	testing.TB
	reason string
}

func (r *skipRecorder) Helper() {}

func (r *skipRecorder) Skipf(format string, args ...any) { r.reason = fmt.Sprintf(format, args...) }

// A required gate the server does not know fails Start before anything
// runs, naming the gate and the way out.
func TestStartRejectsAnUnknownFeatureGate(t *testing.T) {
	_, err := Start(Options{FeatureGates: map[string]bool{"NoSuchFeatureGateInAnyVersion": true}})
	if err == nil || !strings.Contains(err.Error(), "does not know the feature gate(s) NoSuchFeatureGateInAnyVersion") || !strings.Contains(err.Error(), "OptionalFeatureGates") {
		t.Fatalf("Start with an unknown gate: err = %v, want one naming the gate and OptionalFeatureGates", err)
	}
}

// The server's version is learnt from it.
func TestServerVersion(t *testing.T) {
	v, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" && env.ServerVersion() != "v"+v {
		t.Errorf("ServerVersion() = %q, want v%s", env.ServerVersion(), v)
	}
}

func TestStartRejectsABadFeatureGateName(t *testing.T) {
	_, err := Start(Options{FeatureGates: map[string]bool{"A=true,B": true}})
	if err == nil || !strings.Contains(err.Error(), "Options.FeatureGates") {
		t.Fatalf("Start with a malformed gate name: err = %v, want one naming Options.FeatureGates", err)
	}
}

// featureEnabled returns the value of kube-apiserver's
// kubernetes_feature_enabled metric for gate: "1" on, "0" off.
func featureEnabled(t *testing.T, e *Environment, gate string) string {
	t.Helper()
	body, err := e.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("get /metrics: %v", err)
	}
	prefix := `kubernetes_feature_enabled{name="` + gate + `"`
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, prefix) {
			fields := strings.Fields(line)
			return fields[len(fields)-1]
		}
	}
	t.Fatalf("/metrics has no %s line", prefix)
	return ""
}
