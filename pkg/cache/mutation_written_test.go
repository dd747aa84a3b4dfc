package cache_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// The commonest slip: a reader modifies an object a Lister returned and
// writes it back. The write's watch event replaces the cached object before
// any periodic check, so the detector compares the object being replaced
// with its copy. The check interval is an hour (or checks are on demand
// only): the periodic check plays no part.
func TestModifiedThenWrittenIsReported(t *testing.T) {
	for _, tt := range []struct {
		name     string
		interval time.Duration
	}{
		{name: "OnMutation", interval: time.Hour},
		{name: "CheckMutations", interval: -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			createConfigMaps(t, ns)
			reports := make(chan *cache.MutationError, 10)
			c := newCache(t, cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{
				Detect: true, TraceReads: true, Interval: tt.interval,
				OnMutation: func(err *cache.MutationError) { reports <- err },
			}})
			cms := configMaps(t, c)
			start(t, c)
			cm, err := cms.Get(ns, "csa")
			if err != nil {
				t.Fatal(err)
			}
			cm.Labels["written"] = "yes" // the slip: no DeepCopy
			written := update(t, cm)
			waitForVersion(t, cms, ns, "csa", written)

			var got *cache.MutationError
			if tt.interval > 0 {
				select {
				case got = <-reports:
				case <-time.After(30 * time.Second):
					t.Fatal("no report of the ConfigMap modified in place and then written")
				}
			} else if !errors.As(c.CheckMutations(), &got) {
				t.Fatal("CheckMutations found nothing; want the ConfigMap modified in place and then written")
			}
			if got.Namespace != ns || got.Name != "csa" || got.GVK.Kind != "ConfigMap" {
				t.Errorf("report names %s %s/%s, want ConfigMap %s/csa", got.GVK, got.Namespace, got.Name, ns)
			}
			if diff := cmp.Diff([]string{"metadata.labels.written"}, got.Fields); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
			if len(got.ReadAt) == 0 || !strings.Contains(got.ReadAt[0], "TestModifiedThenWrittenIsReported") {
				t.Errorf("ReadAt = %q, want the test's read", got.ReadAt)
			}
			if !strings.Contains(got.Error(), "replaced") {
				t.Errorf("the report does not say a write replaced the object: %v", got)
			}
			if err := c.CheckMutations(); err != nil {
				t.Errorf("reported twice: %v", err)
			}
		})
	}
}

// An object read from a Lister and written back unmodified, or updated by
// someone else, or deleted, is not reported.
func TestWrittenUnmodifiedIsNotReported(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}, Mutations: cache.MutationOptions{Detect: true, Interval: -1}})
	cms := configMaps(t, c)
	start(t, c)
	cm, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	// Unmodified, though the write drops what the cache stripped (the
	// last-applied annotation): a new version, whose event replaces cm.
	waitForVersion(t, cms, ns, "csa", update(t, cm))
	theirs, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "csa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs.Data["k"] = "by someone else"
	waitForVersion(t, cms, ns, "csa", update(t, theirs))
	plain, err := cms.Get(ns, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if err := clientset(t).CoreV1().ConfigMaps(ns).Delete(t.Context(), plain.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool { _, err := cms.Get(ns, "plain"); return err != nil })
	if err := c.CheckMutations(); err != nil {
		t.Errorf("a false report: %v", err)
	}
}

func configMaps(t *testing.T, c *cache.Cache) *cache.Lister[*corev1.ConfigMap] {
	t.Helper()
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cms
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// update writes cm, that very object, and returns the version written. A
// clientset's Update, unlike controller-runtime's client, does not decode
// the response into its argument: the only modification of cm is the
// caller's.
func update(t *testing.T, cm *corev1.ConfigMap) string {
	t.Helper()
	got, err := clientset(t).CoreV1().ConfigMaps(cm.Namespace).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.ResourceVersion
}

// waitForVersion waits until the cache holds version rv of the ConfigMap:
// its watch event has gone through the informer.
func waitForVersion(t *testing.T, cms *cache.Lister[*corev1.ConfigMap], ns, name, rv string) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool {
		cm, err := cms.Get(ns, name)
		return err == nil && cm.ResourceVersion == rv
	})
}
