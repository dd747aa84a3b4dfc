package cachedclient_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// A write-back of what the cached client read keeps what the cache
// stripped: kubectl apply's last-applied annotation survives an Update,
// typed or unstructured, controllerutil.CreateOrUpdate and CreateOrPatch
// of a copy that lacks it, so the next kubectl apply still prunes what its
// manifest dropped. So does an Update through the UncachedClient of a
// Lister's copy, as a port written for controller-runtime's unstripped
// cache makes.
// managedFields, also stripped, survive as well. The ConfigMap is
// created and changed by the real kubectl, as a user would.
func TestWriteBackKeepsWhatTheCacheStripped(t *testing.T) {
	kubectl := kubectlFor(t)
	ns := env.Namespace(t)
	mgr, configMaps := startManager(t, ns)
	cl := mgr.CachedClient()
	writes := []struct {
		name, object string
		write        func(ctx context.Context, cm *corev1.ConfigMap) error
	}{
		{"Update", "updated", func(ctx context.Context, cm *corev1.ConfigMap) error {
			if err := cl.Get(ctx, crclient.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			cm.Data["mine"] = "x"
			return cl.Update(ctx, cm)
		}},
		{"Update unstructured", "updated-unstructured", func(ctx context.Context, cm *corev1.ConfigMap) error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(configMapGVK)
			if err := cl.Get(ctx, crclient.ObjectKeyFromObject(cm), u); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(u.Object, "x", "data", "mine"); err != nil {
				return err
			}
			return cl.Update(ctx, u)
		}},
		{"CreateOrUpdate", "created-or-updated", func(ctx context.Context, cm *corev1.ConfigMap) error {
			_, err := controllerutil.CreateOrUpdate(ctx, cl, cm, func() error {
				cm.Data["mine"] = "x"
				return nil
			})
			return err
		}},
		{"CreateOrPatch", "created-or-patched", func(ctx context.Context, cm *corev1.ConfigMap) error {
			_, err := controllerutil.CreateOrPatch(ctx, cl, cm, func() error {
				cm.Data["mine"] = "x"
				return nil
			})
			return err
		}},
		{"UncachedClient Update of a Lister's copy", "uncached-updated", func(ctx context.Context, cm *corev1.ConfigMap) error {
			read, err := configMaps.typed.Get(cm.Namespace, cm.Name)
			if err != nil {
				return err
			}
			cm = read.DeepCopy()
			cm.Data["mine"] = "x"
			return mgr.UncachedClient().Update(ctx, cm)
		}},
		{"UncachedClient Update of its own read", "uncached-read-updated", func(ctx context.Context, cm *corev1.ConfigMap) error {
			if err := mgr.UncachedClient().Get(ctx, crclient.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			cm.Data["mine"] = "x"
			return mgr.UncachedClient().Update(ctx, cm)
		}},
	}
	for _, w := range writes {
		name := w.name
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{}
			cm.Namespace, cm.Name = ns, w.object
			kubectl.apply(t, ns, cm.Name, `{"keep": "1", "drop": "1"}`)
			live := &corev1.ConfigMap{}
			if err := mgr.UncachedClient().Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := configMaps.waitForBoth(ctx, live); err != nil {
				t.Fatal(err)
			}

			if err := w.write(t.Context(), cm); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := mgr.UncachedClient().Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
				t.Fatal(err)
			}
			if _, ok := live.Annotations[corev1.LastAppliedConfigAnnotation]; !ok {
				t.Errorf("after %s, the API server's object has lost %s (annotations %v)", name, corev1.LastAppliedConfigAnnotation, live.Annotations)
			}
			if len(live.ManagedFields) == 0 {
				t.Errorf("after %s, the API server's object has lost its managedFields", name)
			}

			kubectl.apply(t, ns, cm.Name, `{"keep": "1"}`)
			if err := mgr.UncachedClient().Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"keep": "1", "mine": "x"}, live.Data); diff != "" {
				t.Errorf("kubectl apply without drop after %s: data (-want +got):\n%s", name, diff)
			}
		})
	}
}

// kubectl runs the test control plane's kubectl against env.
type kubectl struct{ path, kubeconfig string }

func kubectlFor(t *testing.T) kubectl {
	t.Helper()
	p, err := testenv.Kubectl()
	if err != nil {
		t.Skip(err)
	}
	k := kubectl{path: p, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := env.WriteKubeconfig(k.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return k
}

// apply runs kubectl apply (client-side, which keeps the last-applied
// annotation) of a ConfigMap with the given data, as JSON.
func (k kubectl) apply(t *testing.T, ns, name, data string) {
	t.Helper()
	manifest := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "` + ns + `", "name": "` + name + `"}, "data": ` + data + `}`
	cmd := exec.CommandContext(t.Context(), k.path, "--kubeconfig", k.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = bytes.NewBufferString(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s", name, err, out)
	}
}

// startManager starts a manager that caches the ConfigMaps of ns, typed
// and unstructured, as they are cached by default, and returns it once synced.
// startManager starts a manager whose cache holds the ConfigMaps of ns in
// typed and unstructured form: two informers, each of which has to catch
// up with a write on its own (see waitForBoth).
func startManager(t *testing.T, ns string) (*manager.Manager, configMapListers) {
	t.Helper()
	mgr, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache: cache.Options{
			Namespaces: []string{ns},
			Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	configMaps, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructuredConfigMaps, err := cache.Unstructured(mgr.Cache(), configMapGVK, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager Start: %v", err)
		}
	})
	syncCtx, cancelSync := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelSync()
	if err := mgr.Cache().WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	return mgr, configMapListers{typed: configMaps, unstructured: unstructuredConfigMaps}
}

type configMapListers struct {
	typed        *cache.Lister[*corev1.ConfigMap]
	unstructured *cache.Lister[*unstructured.Unstructured]
}

// waitForBoth waits until both forms' informers hold live or a later
// version: a test that waited for one form only and read the other failed
// now and then with NotFound.
func (l configMapListers) waitForBoth(ctx context.Context, live *corev1.ConfigMap) error {
	if err := l.typed.WaitFor(ctx, live); err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(live.Namespace)
	u.SetName(live.Name)
	u.SetResourceVersion(live.ResourceVersion)
	return l.unstructured.WaitFor(ctx, u)
}

// An Update sent as a merge patch keeps an update's meaning: what the
// caller removed from its copy is removed, the field owner is the
// caller's, and a copy older than the server's is a conflict.
func TestUpdateOfACachedCopyIsStillAnUpdate(t *testing.T) {
	ns := env.Namespace(t)
	mgr, configMaps := startManager(t, ns)
	w, err := cachedclient.NewWriter(mgr.CachedClient(), cachedclient.WriterOptions{Controller: "web"})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", Labels: map[string]string{"team": "a"}},
		Data:       map[string]string{"keep": "1", "drop": "1"},
	}
	if err := mgr.UncachedClient().Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := configMaps.typed.WaitFor(ctx, cm); err != nil {
		t.Fatal(err)
	}
	read := &corev1.ConfigMap{}
	if err := w.Get(t.Context(), crclient.ObjectKeyFromObject(cm), read); err != nil {
		t.Fatal(err)
	}
	stale := read.DeepCopy()
	read.Labels = nil
	delete(read.Data, "drop")
	read.Data["new"] = "1"
	if err := w.Update(t.Context(), read); err != nil {
		t.Fatal(err)
	}
	live := &corev1.ConfigMap{}
	if err := mgr.UncachedClient().Get(t.Context(), crclient.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"keep": "1", "new": "1"}, live.Data); diff != "" || live.Labels != nil {
		t.Errorf("after the Update: labels %v, data (-want +got):\n%s", live.Labels, diff)
	}
	if read.ResourceVersion != live.ResourceVersion {
		t.Errorf("Update left resourceVersion %s in the caller's object; the server has %s", read.ResourceVersion, live.ResourceVersion)
	}
	var managers []string
	for _, f := range live.ManagedFields {
		managers = append(managers, f.Manager+"/"+string(f.Operation))
	}
	if !slices.Contains(managers, "web/Update") {
		t.Errorf("field managers %v, want web/Update among them", managers)
	}

	if err := configMaps.typed.WaitFor(ctx, live); err != nil {
		t.Fatal(err)
	}
	stale.Data["late"] = "1"
	if err := w.Update(t.Context(), stale); !apierrors.IsConflict(err) {
		t.Errorf("Update of a copy older than the server's = %v, want a conflict", err)
	}
}

// The way to delete a stripped field on purpose: an Update through the
// UncachedClient of an object read from the API server, whose
// managedFields tell it from a cached copy, is sent as it is.
func TestUncachedUpdateOfAnAPIServerReadDeletes(t *testing.T) {
	kubectl := kubectlFor(t)
	ns := env.Namespace(t)
	mgr, configMaps := startManager(t, ns)
	kubectl.apply(t, ns, "forget", `{"keep": "1"}`)
	cm := &corev1.ConfigMap{}
	key := crclient.ObjectKey{Namespace: ns, Name: "forget"}
	if err := mgr.UncachedClient().Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := configMaps.waitForBoth(ctx, cm); err != nil {
		t.Fatal(err)
	}
	delete(cm.Annotations, corev1.LastAppliedConfigAnnotation)
	if err := mgr.UncachedClient().Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := mgr.UncachedClient().Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	if v, ok := cm.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Errorf("the annotation deleted from an API server read survived the UncachedClient's Update: %q", v)
	}
}
