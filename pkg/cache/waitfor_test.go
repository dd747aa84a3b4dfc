package cache_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// After a write, WaitFor returns once the cache holds the written version,
// so that a Get then sees it.
func TestWaitForAWrite(t *testing.T) {
	ns := env.Namespace(t)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cl := writeClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound on failure, not a measurement
	defer cancel()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "written"}, Data: map[string]string{"k": "v1"}}
	if err := cl.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cms.WaitFor(ctx, cm); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := cms.Get(ns, "written")
		if err != nil {
			t.Fatalf("write %d: Get after WaitFor = %v", i, err)
		}
		if got.ResourceVersion != cm.ResourceVersion {
			t.Fatalf("write %d: cached resourceVersion after WaitFor = %s, want %s", i, got.ResourceVersion, cm.ResourceVersion)
		}
		// Update the object the API server returned: cm carries the new
		// resourceVersion for the next round.
		cm.Data["k"] = "v" + strconv.Itoa(i+2)
		if err := cl.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
}

// A WaitFor whose context ends says what it waited for and what the cache
// holds.
func TestWaitForReportsBothVersions(t *testing.T) {
	ns := env.Namespace(t)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cl := writeClient(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "behind"}}
	if err := cl.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := cms.WaitFor(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	have, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	future := cm.DeepCopy()
	future.ResourceVersion = strconv.FormatUint(have*10, 10) // longer: newer than anything yet written

	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("the test gave up")
	cancel(stop)
	err = cms.WaitFor(ctx, future)
	if !errors.Is(err, stop) {
		t.Errorf("WaitFor = %v, want it to wrap the context's cause", err)
	}
	for _, want := range []string{ns + "/behind", "resourceVersion " + future.ResourceVersion, "resourceVersion " + cm.ResourceVersion} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitFor error = %v, want it to name %q", err, want)
		}
	}

	missing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never-written", ResourceVersion: cm.ResourceVersion}}
	if err := cms.WaitFor(ctx, missing); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("WaitFor an object never cached = %v, want it to say the cache holds none", err)
	}

	cache.Remove(cms)
	if err := cms.WaitFor(t.Context(), cm); !errors.Is(err, cache.ErrRemoved) {
		t.Errorf("WaitFor on a removed type = %v, want ErrRemoved at once", err)
	}
}
