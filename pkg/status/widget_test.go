package status_test

import (
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var widgetGVK = schema.GroupVersionKind{Group: "test.opkit.dev", Version: "v1", Kind: "Widget"}

// Widget is the test CRD's type, with a status as operators write them.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]string `json:"spec,omitempty"`
	Status            WidgetStatus      `json:"status,omitempty"`
}

// WidgetStatus is a Widget's status.
type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Copies             int32              `json:"copies,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = maps.Clone(w.Spec)
	out.Status.Conditions = slices.Clone(w.Status.Conditions)
	return &out
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Widget))
	}
	return out
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(widgetGVK.GroupVersion(), &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGVK.GroupVersion())
	return s
}

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// newClient returns a client on the test control plane that knows Widgets,
// and the count of the requests it sends.
func newClient(t *testing.T) (client.Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &n} })
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	// Warm the REST mapper, so that only the requests under test count.
	if _, err := c.RESTMapper().RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version); err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	return c, &n
}

// newWidget creates a Widget and returns it as the API server stored it.
func newWidget(t *testing.T, c client.Client, ns string) *Widget {
	t.Helper()
	w := &Widget{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Namespace: ns}, Spec: map[string]string{"size": "1"}}
	if err := c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}
