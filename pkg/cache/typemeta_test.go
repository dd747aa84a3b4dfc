package cache_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// kindOf returns the apiVersion and kind obj carries, as
// controller-runtime's cached client returns them.
func kindOf(obj runtime.Object) string {
	apiVersion, kind := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	return apiVersion + ", " + kind
}

// Objects a Lister returns carry their apiVersion and kind, which the
// informer's decoder leaves empty, whether listed before Start or watched
// after, in the core group or another; so do the objects handed to event
// handlers, deletes included. The mutation detector (on in the tests) sees
// no change: the kind is set before the object is stored.
func TestListerObjectsCarryTheirKind(t *testing.T) {
	ns := env.Namespace(t)
	cl := writeClient(t)
	ctx := t.Context()
	if err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listed"}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, newDeployment(ns, "web")); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployments, err := cache.Register[*appsv1.Deployment](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events := &kindRecorder{deleted: make(chan struct{})}
	if _, err := cms.AddEventHandler(events); err != nil {
		t.Fatal(err)
	}
	start(t, c)

	watched := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watched"}}
	if err := cl.Create(ctx, watched); err != nil {
		t.Fatal(err)
	}
	if err := cms.WaitFor(ctx, watched); err != nil {
		t.Fatal(err)
	}
	const cmKind, deploymentKind = "v1, ConfigMap", "apps/v1, Deployment"
	for _, name := range []string{"listed", "watched"} {
		cm, err := cms.Get(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := kindOf(cm); got != cmKind {
			t.Errorf("Get(%s) carries %q, want %q", name, got, cmKind)
		}
	}
	all, err := cms.List(ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range all {
		if got := kindOf(cm); got != cmKind {
			t.Errorf("List: %s carries %q, want %q", cm.Name, got, cmKind)
		}
	}
	d, err := deployments.Get(ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := kindOf(d); got != deploymentKind {
		t.Errorf("Get(web) carries %q, want %q", got, deploymentKind)
	}

	update := watched.DeepCopy()
	update.Data = map[string]string{"k": "v"}
	if err := cl.Update(ctx, update); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, update); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"add listed: " + cmKind, "add watched: " + cmKind,
		"update watched: " + cmKind + " (old " + cmKind + ")", "delete watched: " + cmKind,
	}
	if diff := cmp.Diff(want, events.waitForDelete(t)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if err := c.CheckMutations(); err != nil {
		t.Error(err)
	}
}

func newDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

// kindRecorder records each event as "verb name: apiVersion, kind", and
// closes deleted at the first delete.
type kindRecorder struct {
	mu      sync.Mutex
	events  []string
	deleted chan struct{}
}

var _ toolscache.ResourceEventHandler = (*kindRecorder)(nil)

func (r *kindRecorder) record(verb string, obj any, old ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := obj.(*corev1.ConfigMap)
	if o.Name == "kube-root-ca.crt" { // made by a controller, if one runs
		return
	}
	e := verb + " " + o.Name + ": " + kindOf(o)
	for _, o := range old {
		e += " (old " + kindOf(o.(*corev1.ConfigMap)) + ")"
	}
	r.events = append(r.events, e)
	if verb == "delete" {
		close(r.deleted)
	}
}

func (r *kindRecorder) OnAdd(obj any, _ bool)       { r.record("add", obj) }
func (r *kindRecorder) OnUpdate(oldObj, newObj any) { r.record("update", newObj, oldObj) }
func (r *kindRecorder) OnDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	r.record("delete", obj)
}

// waitForDelete returns the events recorded once the first delete is.
func (r *kindRecorder) waitForDelete(t *testing.T) []string {
	t.Helper()
	select {
	case <-r.deleted:
	case <-time.After(30 * time.Second):
		t.Fatal("no delete event within 30s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}
