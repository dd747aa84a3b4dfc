package container

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
)

// Fan-out sizes of checkFanOut: a source near the API server's limit on an
// object, copied into many namespaces. Before the copies were cached as
// metadata only, this took the operator to 216–275 MiB (issue 30).
const (
	fanOutNamespaces = 100
	fanOutBytes      = 1 << 20
)

// checkFanOut copies a 1 MiB ConfigMap into 100 namespaces that accept it,
// then changes it, and checks that the operator, under the Deployment's
// memory limit, is not OOM-killed and that its cgroup's peak charge stays
// under three quarters of the limit: the cache holds the source once and
// no copy's data, and a write holds its copy only while it is sent.
func checkFanOut(t *testing.T, pid int, c client.Client, mgr corev1.Container) {
	limit := mgr.Resources.Limits.Memory().Value()
	if limit == 0 {
		t.Fatal("the Deployment sets no memory limit")
	}
	home := env.Namespace(t)
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"opkit.dev/container-fan-out": home}
	for range fanOutNamespaces {
		labels := map[string]string{mirror.AcceptLabel(home): "true"}
		for k, v := range sel {
			labels[k] = v
		}
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "container-fan-out-", Labels: labels}}
		if err := c.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	}
	// A little under 1 MiB: the API server refuses objects over 1 MiB
	// with their metadata.
	payload := strings.Repeat("a", fanOutBytes-4096)
	src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "big"}, Data: map[string]string{"payload": payload}}
	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "big"},
		Spec: v1alpha1.MirrorSpec{
			Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: src.Name},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
		},
	}
	for _, o := range []client.Object{src, m} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	synced := func(version string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			var got v1alpha1.Mirror
			if err := c.Get(ctx, client.ObjectKeyFromObject(m), &got); err != nil {
				return false, err
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			if ready == nil || ready.Reason != v1alpha1.ReasonSynced || got.Status.SyncedNamespaces != fanOutNamespaces {
				return false, nil
			}
			var copies corev1.ConfigMapList
			if err := c.List(ctx, &copies, client.MatchingLabels{mirror.LabelMirrorNamespace: home}); err != nil {
				return false, err
			}
			n := 0
			for _, cp := range copies.Items {
				if strings.HasPrefix(cp.Data["payload"], version) {
					n++
				}
			}
			return n == fanOutNamespaces, nil
		}
	}
	waitFor(t, pid, fmt.Sprintf("%d copies of a 1 MiB ConfigMap", fanOutNamespaces), synced("a"))
	src.Data["payload"] = "b" + payload[1:]
	if err := c.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, pid, fmt.Sprintf("%d copies to follow the change", fanOutNamespaces), synced("b"))

	peak, file, err := cgroupPeak(pid)
	if err != nil {
		t.Fatalf("read the container's cgroup peak: %v", err)
	}
	t.Logf("1 MiB × %d namespaces: the operator's peak RSS (VmHWM) %s; the cgroup's peak charge (%s) %.1f MiB of a %d MiB limit",
		fanOutNamespaces, procStatus(t, pid)["VmHWM"], file, float64(peak)/(1<<20), limit>>20)
	if peak > limit*3/4 {
		t.Errorf("the cgroup's peak charge is %.1f MiB: over three quarters of the %d MiB limit", float64(peak)/(1<<20), limit>>20)
	}
	if kills, err := cgroupOOMKills(pid); err != nil {
		t.Logf("cannot read the cgroup's OOM kills: %v", err)
	} else if kills != 0 {
		t.Errorf("the cgroup's processes were OOM-killed %d times", kills)
	}
}

// heldSources is how many sources of fanOutBytes checkHeldSources makes a
// tenant's Mirrors read: more, between them, than the Deployment's memory
// limit.
const heldSources = 140

// checkHeldSources makes heldSources ConfigMaps of 1 MiB and a Mirror of
// each that copies it nowhere, as a tenant who wants the operator to hold
// them would, and checks that the operator, under the Deployment's memory
// limit, reconciles every one and is not OOM-killed: it reads a source
// per reconcile, as the Mirror's ServiceAccount, and holds none after.
func checkHeldSources(t *testing.T, pid int, c client.Client, mgr corev1.Container) {
	limit := mgr.Resources.Limits.Memory().Value()
	home := env.Namespace(t)
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("h", fanOutBytes-4096)
	nowhere := metav1.LabelSelector{MatchLabels: map[string]string{"opkit.dev/held-sources-test": "no-namespace"}}
	for i := range heldSources {
		name := fmt.Sprintf("held-%03d", i)
		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: name}, Data: map[string]string{"payload": payload}}
		m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: name},
			Spec: v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: name}, NamespaceSelector: nowhere}}
		for _, o := range []client.Object{src, m} {
			if err := c.Create(t.Context(), o); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, pid, fmt.Sprintf("%d Mirrors of 1 MiB sources to be reconciled", heldSources), func(ctx context.Context) (bool, error) {
		var ms v1alpha1.MirrorList
		if err := c.List(ctx, &ms, client.InNamespace(home)); err != nil {
			return false, err
		}
		n := 0
		for _, m := range ms.Items {
			if ready := apimeta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Reason == v1alpha1.ReasonSynced {
				n++
			}
		}
		return n == heldSources, nil
	})
	peak, file, err := cgroupPeak(pid)
	if err != nil {
		t.Fatalf("read the container's cgroup peak: %v", err)
	}
	t.Logf("%d sources of 1 MiB: the operator's peak RSS (VmHWM) %s; the cgroup's peak charge (%s) %.1f MiB of a %d MiB limit",
		heldSources, procStatus(t, pid)["VmHWM"], file, float64(peak)/(1<<20), limit>>20)
	if kills, err := cgroupOOMKills(pid); err != nil {
		t.Logf("cannot read the cgroup's OOM kills: %v", err)
	} else if kills != 0 {
		t.Errorf("the cgroup's processes were OOM-killed %d times", kills)
	}
	if peak > limit*3/4 {
		t.Errorf("the cgroup's peak charge is %.1f MiB: over three quarters of the %d MiB limit", float64(peak)/(1<<20), limit>>20)
	}
}
