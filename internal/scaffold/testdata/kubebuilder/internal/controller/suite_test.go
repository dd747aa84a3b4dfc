package controller_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	guestbookv1 "example.com/guestbook/api/v1"
	"example.com/guestbook/internal/controller"
)

// TestGuestReconciler runs the controller on a manager, against the
// cluster KUBECONFIG names (USE_EXISTING_CLUSTER=true), with the CRDs
// installed: a Guest gets its ConfigMap, which counts the Secrets that
// name the guest.
func TestGuestReconciler(t *testing.T) {
	if os.Getenv("USE_EXISTING_CLUSTER") != "true" {
		t.Skip("set USE_EXISTING_CLUSTER=true and KUBECONFIG to a cluster with the CRDs installed")
	}
	testEnv := &envtest.Environment{UseExistingCluster: ptr.To(true)}
	cfg, err := testEnv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = testEnv.Stop() }()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := guestbookv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	k8sManager, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.SetupIndexes(ctx, k8sManager.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	reconciler := &controller.GuestReconciler{Client: k8sManager.GetClient(), Scheme: k8sManager.GetScheme(), Greeting: "Hello"}
	if err := reconciler.SetupWithManager(k8sManager); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k8sManager.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	}()

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "suite-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bob-token", Labels: map[string]string{"guest": "bob"}}},
		&guestbookv1.Guest{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bob"}, Spec: guestbookv1.GuestSpec{Name: "Bob"}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var cm corev1.ConfigMap
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "guest-bob"}, &cm)
		return err == nil && cm.Data["greeting"] == "Hello, Bob" && cm.Data["secrets"] == "1", nil
	})
	if err != nil {
		t.Fatalf("no ConfigMap guest-bob greeting Bob and counting one Secret: %v (last read: %v)", err, cm.Data)
	}
}
