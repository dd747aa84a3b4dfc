package website

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	examplev1 "github.com/opkit-dev/opkit/examples/website/api/v1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := examplev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The opkit controller (website.go) on the test control plane.
func TestWebsite(t *testing.T) {
	ns := env.Namespace(t)
	mgr, err := manager.New(env.Config(), manager.Options{
		Scheme:  newScheme(t),
		Cache:   cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{OnMutation: testenv.ReportMutations(t)}},
		Metrics: manager.MetricsOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWebsite(mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr.Start)
	exercise(t, ns, func(cl client.Client, dep *appsv1.Deployment) {
		// A reconcile that finds nothing new for the Website sends no
		// status: a new label of the Deployment (an annotation would raise
		// its generation) queues the Website. The Deployment's apply is
		// sent again, since someone else wrote the Deployment after the
		// controller's last apply, and so is the record's (ConfigMaps are
		// not cached); the status apply is the one the writer can skip.
		before := applies(t, mgr, "skipped")
		dep.Labels = map[string]string{"example.opkit.dev/touched": "yes"}
		if err := cl.Update(t.Context(), dep); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a reconcile that skips its status apply", func() bool { return applies(t, mgr, "skipped") > before })
	})
}

// applies returns the applies the website controller's writer counted
// with result ("sent" or "skipped") in opkit_client_writes_total.
func applies(t *testing.T, mgr *manager.Manager, result string) float64 {
	t.Helper()
	mfs, err := mgr.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "opkit_client_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "website" && labels["verb"] == "apply" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The controller-runtime controller (website_controllerruntime_test.go)
// on the same control plane, through the same steps.
func TestWebsiteControllerRuntime(t *testing.T) {
	ns := env.Namespace(t)
	mgr, err := ctrl.NewManager(env.Config(), ctrl.Options{
		Scheme:  newScheme(t),
		Cache:   crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&CRWebsiteReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr.Start)
	exercise(t, ns, nil)
}

// run runs start until the test ends.
func run(t *testing.T, start func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// exercise takes a Website in ns through its life, as a user and the
// Deployment controller (which the test control plane lacks) would, and
// checks what the controller running does at each step. settled, if not
// nil, runs once the Website is Ready at its second generation.
func exercise(t *testing.T, ns string, settled func(client.Client, *appsv1.Deployment)) {
	cl, err := client.New(env.Config(), client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	site := &examplev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: examplev1.WebsiteSpec{Image: "nginx:1.27", Replicas: 2}}
	if err := cl.Create(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	waitFor(t, "the Deployment, the record, the finalizer and Ready=False", func() bool {
		return get(t, cl, client.ObjectKeyFromObject(site), dep) &&
			get(t, cl, client.ObjectKey{Namespace: Records, Name: ns + ".shop"}, &corev1.ConfigMap{}) &&
			get(t, cl, client.ObjectKeyFromObject(site), site) &&
			slices.Contains(site.Finalizers, Finalizer) && ready(site) == metav1.ConditionFalse
	})
	if c := dep.Spec.Template.Spec.Containers; *dep.Spec.Replicas != 2 || len(c) != 1 || c[0].Image != "nginx:1.27" {
		t.Errorf("Deployment spec: %d replicas of %+v, want 2 of nginx:1.27", *dep.Spec.Replicas, c)
	}
	if ref := metav1.GetControllerOf(dep); ref == nil || ref.Kind != "Website" || ref.UID != site.UID {
		t.Errorf("Deployment controller reference %+v, want the Website's", ref)
	}

	// The Deployment controller rolls the pods out: the owned-object watch
	// brings the news to the Website.
	available(t, cl, dep)
	waitFor(t, "Ready=True", func() bool {
		return get(t, cl, client.ObjectKeyFromObject(site), site) && ready(site) == metav1.ConditionTrue
	})

	// A new image is a new generation: Ready until the rollout is seen,
	// then Ready again, each for the generation it describes.
	site.Spec.Image = "nginx:1.28"
	if err := cl.Update(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new image, and Ready=False of generation 2", func() bool {
		return get(t, cl, client.ObjectKeyFromObject(site), dep) && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28" &&
			get(t, cl, client.ObjectKeyFromObject(site), site) && ready(site) == metav1.ConditionFalse
	})
	available(t, cl, dep)
	waitFor(t, "Ready=True of generation 2", func() bool {
		return get(t, cl, client.ObjectKeyFromObject(site), site) && ready(site) == metav1.ConditionTrue
	})
	if settled != nil {
		get(t, cl, client.ObjectKeyFromObject(site), dep)
		settled(cl, dep)
	}

	// Deleting the Website deletes its record, then the finalizer lets it go.
	if err := cl.Delete(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the record and the Website to go", func() bool {
		return !get(t, cl, client.ObjectKey{Namespace: Records, Name: ns + ".shop"}, &corev1.ConfigMap{}) &&
			!get(t, cl, client.ObjectKeyFromObject(site), &examplev1.Website{})
	})
}

// ready returns the status of site's Ready condition if it describes its
// current generation, and "" otherwise.
func ready(site *examplev1.Website) metav1.ConditionStatus {
	c := apimeta.FindStatusCondition(site.Status.Conditions, examplev1.ConditionReady)
	if c == nil || c.ObservedGeneration != site.Generation || site.Status.ObservedGeneration != site.Generation {
		return ""
	}
	return c.Status
}

// available writes dep's status as the Deployment controller would once
// every replica of its current spec is available.
func available(t *testing.T, cl client.Client, dep *appsv1.Deployment) {
	t.Helper()
	dep.Status.ObservedGeneration = dep.Generation
	dep.Status.Replicas, dep.Status.UpdatedReplicas = *dep.Spec.Replicas, *dep.Spec.Replicas
	dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = *dep.Spec.Replicas, *dep.Spec.Replicas
	if err := cl.Status().Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
}

// get reads key into obj, and reports whether it exists.
func get(t *testing.T, cl client.Client, key client.ObjectKey, obj client.Object) bool {
	t.Helper()
	err := cl.Get(t.Context(), key, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// waitFor polls cond until it holds; the bound only keeps a broken test
// from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
