package dynamic_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/examples/dynamic"
	website "github.com/opkit-dev/opkit/examples/website/api/v1"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

var websiteGVK = website.GroupVersion.WithKind("Website")

// A WatchSet naming ConfigMaps (by label), Websites and a kind with no
// CRD: its kinds are counted and their states reported; a kind dropped
// from it loses its controller and hold; the WatchSet deleted, every
// kind's hold is released.
func TestWatchSet(t *testing.T) {
	ns := env.Namespace(t)
	scheme := newScheme(t)
	mgr, err := manager.New(env.Config(), manager.Options{
		Scheme:  scheme,
		Cache:   cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{OnMutation: testenv.ReportMutations(t)}},
		Metrics: manager.MetricsOptions{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamic.Setup(mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr.Start)
	cl, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	create := func(obj client.Object) {
		t.Helper()
		if err := cl.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	labelled := map[string]string{"app": "counted"}
	for _, name := range []string{"a", "b"} {
		create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelled}})
	}
	create(&website.Website{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: website.WebsiteSpec{Image: "nginx", Replicas: 1}})

	ws := &dynamic.WatchSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}, Spec: dynamic.WatchSetSpec{Kinds: []dynamic.Kind{
		{Version: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: labelled}},
		{Group: websiteGVK.Group, Version: websiteGVK.Version, Kind: websiteGVK.Kind},
		{Group: "absent.opkit.dev", Version: "v1", Kind: "Nothing"},
	}}}
	create(ws)
	waitStatus(t, cl, ws, "ConfigMap=2/Watching Website=1/Watching Nothing=0/CRDNotInstalled")

	// A new object is counted: the ConfigMap controller, added at run
	// time, sees it.
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", Labels: labelled}})
	waitStatus(t, cl, ws, "ConfigMap=3/Watching Website=1/Watching Nothing=0/CRDNotInstalled")

	// Websites dropped: their controller goes, and with it the last hold.
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(ws), ws); err != nil {
		t.Fatal(err)
	}
	ws.Spec.Kinds = ws.Spec.Kinds[:1]
	if err := cl.Update(t.Context(), ws); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cl, ws, "ConfigMap=3/Watching")
	waitHolds(t, mgr, dynamic.ControllerName(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}))

	// The WatchSet deleted: no kind is held any more.
	if err := cl.Delete(t.Context(), ws); err != nil {
		t.Fatal(err)
	}
	waitHolds(t, mgr)
}

// waitStatus waits until ws's status reads want: "Kind=count/state ...".
func waitStatus(t *testing.T, cl client.Client, ws *dynamic.WatchSet, want string) {
	t.Helper()
	var got string
	waitFor(t, func(ctx context.Context) (bool, error) {
		cur := &dynamic.WatchSet{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(ws), cur); err != nil {
			return false, err
		}
		var parts []string
		for _, k := range cur.Status.Kinds {
			parts = append(parts, fmt.Sprintf("%s=%d/%s", k.Kind, k.Count, k.State))
		}
		got = strings.Join(parts, " ")
		return got == want, nil
	}, func() string { return fmt.Sprintf("status %q, want %q", got, want) })
}

// waitHolds waits until the kinds' controllers (owners named "kind-...")
// hold exactly the kinds of the owners named.
func waitHolds(t *testing.T, mgr *manager.Manager, owners ...string) {
	t.Helper()
	var got []string
	waitFor(t, func(context.Context) (bool, error) {
		got = nil
		for _, st := range mgr.Cache().Status() {
			for owner := range st.Owners {
				if strings.HasPrefix(owner, "kind-") {
					got = append(got, owner)
				}
			}
		}
		slices.Sort(got)
		return strings.Join(got, ",") == strings.Join(owners, ","), nil
	}, func() string { return fmt.Sprintf("holds by %v, want %v", got, owners) })
}

func waitFor(t *testing.T, cond wait.ConditionWithContextFunc, last func() string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, cond); err != nil {
		t.Fatalf("%v: %s", err, last())
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, dynamic.AddToScheme, website.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

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
