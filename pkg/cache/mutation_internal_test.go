package cache

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
)

func TestDetectorReportsEachModificationOnce(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	d := newDetector(gvk, nil)
	ingest := d.wrap(func(obj any) (any, error) { return obj, nil })
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Data:       map[string]string{"k": "v"},
	}
	if _, err := ingest(cm); err != nil {
		t.Fatal(err)
	}
	if got := d.check(); len(got) != 0 {
		t.Fatalf("check before any modification = %v", got)
	}
	cm.Data["k"] = "changed"
	cm.Labels["team"] = "blue"
	got := d.check()
	if len(got) != 1 {
		t.Fatalf("check = %d reports, want 1", len(got))
	}
	r := got[0]
	if r.GVK != gvk || r.Namespace != "ns" || r.Name != "a" {
		t.Errorf("report names %s %s/%s, want ConfigMap ns/a", r.GVK, r.Namespace, r.Name)
	}
	if diff := cmp.Diff([]string{"data.k", "metadata.labels.team"}, r.Fields); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
	for _, s := range []string{`- data.k: "v"`, `+ data.k: "changed"`, `+ metadata.labels.team: "blue"`} {
		if !strings.Contains(r.Diff, s) {
			t.Errorf("Diff lacks %q:\n%s", s, r.Diff)
		}
	}
	var err error = r
	var me *MutationError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "ConfigMap ns/a was modified in place (changed: data.k, metadata.labels.team)") {
		t.Errorf("Error() = %q", err)
	}
	if again := d.check(); len(again) != 0 {
		t.Errorf("a modification reported twice: %v", again)
	}
}

func TestMutationOptionsDefaults(t *testing.T) {
	t.Setenv(cacheaccess.MutationDetectorEnv, "true")
	t.Setenv(cacheaccess.MutationTraceEnv, "1")
	var o MutationOptions
	o.defaults()
	if !o.Detect || !o.TraceReads || o.Interval != defaultMutationCheckInterval || o.OnMutation == nil {
		t.Errorf("defaults with both variables set = %+v", o)
	}
	t.Setenv(cacheaccess.MutationDetectorEnv, "")
	t.Setenv(cacheaccess.MutationTraceEnv, "")
	o = MutationOptions{}
	o.defaults()
	if o.Detect || o.TraceReads {
		t.Errorf("defaults with neither variable set = %+v, want off", o)
	}
}

// The package documentation states these defaults in words.
func TestDocumentedDefaults(t *testing.T) {
	if defaultMutationCheckInterval != time.Second {
		t.Errorf("defaultMutationCheckInterval = %v; the package doc says 1s", defaultMutationCheckInterval)
	}
	if defaultCRDPollInterval != 2*time.Second {
		t.Errorf("defaultCRDPollInterval = %v; the package doc says 2s", defaultCRDPollInterval)
	}
}

// A modified object is reported when a newer one replaces it or it is
// forgotten, and the detector's found channel is signalled; an unmodified
// one is not.
func TestDetectorReportsModifiedObjectsItReplaces(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	found := make(chan struct{}, 1)
	d := newDetector(gvk, found)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "a"}}}
	}
	a, b, c := cm("a"), cm("b"), cm("c")
	for _, o := range []*corev1.ConfigMap{a, b, c} {
		d.record(objectKey(o.Namespace, o.Name), o)
	}
	a.Labels["x"] = "1"
	b.Labels["x"] = "1"
	d.record("ns/a", cm("a")) // a's write came back
	d.forget("ns/b")          // b was deleted
	d.record("ns/c", cm("c")) // c, unmodified, was updated
	select {
	case <-found:
	default:
		t.Error("found not signalled")
	}
	got := d.check()
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
		if !r.replaced || !slices.Equal(r.Fields, []string{"metadata.labels.x"}) {
			t.Errorf("report of %s: replaced %v, Fields %q", r.Name, r.replaced, r.Fields)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if again := d.check(); len(again) != 0 {
		t.Errorf("reported twice: %v", again)
	}
}
