package manager_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/manager"
)

var gadgetGVK = schema.GroupVersionKind{Group: "test.opkit.dev", Version: "v1", Kind: "Gadget"}

// Gadget is a cluster-scoped custom resource (testdata/gadget-crd).
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	out := &GadgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Gadget))
	}
	return out
}

func gadgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypes(gadgetGVK.GroupVersion(), &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, gadgetGVK.GroupVersion())
	return s
}

// Owns takes the owner's scope from the API server once the owner's CRD is
// installed, not from a guess made when the controller was built: a child
// of a cluster-scoped owner whose CRD came after NewController queues the
// owner's key with no namespace.
func TestOwnsClusterScopedOwnerInstalledLater(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{Scheme: gadgetScheme(t)})
	var s seen
	if _, err := manager.NewController(m, "gadgets", s.reconciler(),
		manager.For[*Gadget](nil),
		manager.Owns[*corev1.ConfigMap](nil),
	); err != nil {
		t.Fatal(err)
	}
	crds, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{Paths: []string{"testdata/gadget-crd"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			t.Errorf("uninstall CRDs: %v", err)
		}
	})
	start(t, m)

	owner := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g-" + ns}}
	if err := m.UncachedClient().Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.UncachedClient().Delete(t.Context(), owner) })
	eventually(t, "the Gadget to be reconciled", func() bool { return s.count("", owner.Name) == 1 })
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: gadgetGVK.GroupVersion().String(), Kind: gadgetGVK.Kind, Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
	}}}}
	if err := m.UncachedClient().Create(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster-scoped owner of a new ConfigMap", func() bool {
		return s.count("", owner.Name) == 2 || s.count(ns, owner.Name) > 0
	})
	if n := s.count(ns, owner.Name); n != 0 {
		t.Errorf("the child queued %d times the key %s/%s, which names no object: a cluster-scoped owner has no namespace", n, ns, owner.Name)
	}
	if n := s.count("", owner.Name); n != 2 {
		t.Errorf("the owner was reconciled %d times, want 2 (its create, its child's create)", n)
	}
}
