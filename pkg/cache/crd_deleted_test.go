package cache_test

import (
	"errors"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

var gadgetGVK = schema.GroupVersionKind{Group: "gone.opkit.dev", Version: "v1", Kind: "Gadget"}

// gadgetCRD returns a new Gadget CRD, which only the tests of deleted CRDs
// install.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.gone.opkit.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", ListKind: "GadgetList", Plural: "gadgets", Singular: "gadget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gadgetGVK.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

func installGadgets(t *testing.T) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}}); err != nil {
		t.Fatal(err)
	}
}

// uninstallGadgets deletes the Gadget CRD and waits until the API server
// no longer serves the kind.
func uninstallGadgets(t *testing.T) {
	t.Helper()
	if err := envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}}); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool {
		_, err := dc.ServerResourcesForGroupVersion(gadgetGVK.GroupVersion().String())
		return apierrors.IsNotFound(err)
	})
}

func createGadget(t *testing.T, ns, name string) {
	t.Helper()
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(gadgetGVK)
	g.SetNamespace(ns)
	g.SetName(name)
	if err := writeClient(t).Create(t.Context(), g); err != nil {
		t.Fatal(err)
	}
}

// A CRD deleted while its kind is cached: reads and Status say so, and the
// cache resumes watching once the CRD is installed again.
func TestCRDDeletedThenRecreated(t *testing.T) {
	ns := env.Namespace(t)
	installGadgets(t)
	t.Cleanup(func() {
		_ = envtest.UninstallCRDs(env.Config(), envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}})
	})
	c := newCache(t, cache.Options{Namespaces: []string{ns}, CRDPollInterval: 250 * time.Millisecond})
	gadgets, err := cache.Unstructured(c, gadgetGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	createGadget(t, ns, "a")
	createGadget(t, ns, "b")
	waitFor(t, 10*time.Second, func() bool { l, err := gadgets.List(ns, nil); return err == nil && len(l) == 2 })

	uninstallGadgets(t)
	var readErr error
	ok := waitUntil(20*time.Second, func() bool { _, readErr = gadgets.List(ns, nil); return errors.Is(readErr, cache.ErrNotInstalled) })
	if !ok {
		t.Errorf("List after the CRD was deleted = %v, want an error wrapping ErrNotInstalled", readErr)
	}
	if st := c.Status()[0]; st.Installed || st.Synced || !errors.Is(st.Err, cache.ErrNotInstalled) {
		t.Errorf("Status after the CRD was deleted = %+v, want not installed", st)
	}

	installGadgets(t)
	createGadget(t, ns, "c")
	if !waitUntil(20*time.Second, func() bool { _, err := gadgets.Get(ns, "c"); return err == nil }) {
		t.Fatalf("the cache did not see a Gadget created after the CRD was installed again; status %+v", c.Status()[0])
	}
}

// waitUntil reports whether cond held within d, checking every 10ms.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
