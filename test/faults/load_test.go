package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// LoadEnv set to 1 runs TestLoad at full size: 10,000 copies.
const LoadEnv = "OPKIT_FAULTS_LOAD"

// procStatus returns fields of /proc/self/status, such as VmHWM (peak RSS).
func procStatus(t *testing.T, fields ...string) string {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, name := range fields {
			if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
				out = append(out, name+" "+strings.Join(strings.Fields(v), " "))
			}
		}
	}
	return strings.Join(out, ", ")
}

// Many Mirrors wait for their first reconcile (the initial list queues
// them at low priority) when one source changes: that change jumps the
// queue and reaches all its copies long before the backlog drains.
func TestLoad(t *testing.T) {
	namespaces, sources := 40, 25 // 1,000 copies
	if os.Getenv(LoadEnv) == "1" {
		namespaces, sources = 200, 50
	}
	w := newWorld(t)
	start := time.Now()
	nss := w.namespaces(namespaces)
	for i := range sources {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
	}
	t.Logf("%d namespaces x %d sources (%d copies to make) created in %v", namespaces, sources, namespaces*sources, time.Since(start).Round(time.Millisecond))
	defer w.removeLoad(nss)

	op := startOperator(t, opOptions{workers: 4})
	started := time.Now()
	// The last Mirror, likely at the back of the backlog, gets a live change
	// once the operator is at work.
	eventually(t, 60*time.Second, "the first copies", func() error {
		if n := w.countCopies(t, ""); n == 0 {
			return fmt.Errorf("no copies yet")
		}
		return nil
	})
	live := fmt.Sprintf("src-%d", sources-1)
	changed := time.Now()
	if err := w.setData(w.home, live, map[string]string{"v": "live"}); err != nil {
		t.Fatal(err)
	}
	backlog := op.counter(t, "workqueue_depth", map[string]string{"name": "mirror"})
	copiesThen := w.countCopies(t, "")
	latency := eventually(t, 120*time.Second, "the live change in every copy of "+live, func() error {
		cms := &corev1.ConfigMapList{}
		if err := w.cl.List(context.Background(), cms, client.MatchingLabels{mirror.LabelMirrorNamespace: w.home, mirror.LabelMirrorName: live}); err != nil {
			return err
		}
		n := 0
		for _, cm := range cms.Items {
			if cm.Data["v"] == "live" {
				n++
			}
		}
		if n != namespaces {
			return fmt.Errorf("%d of %d copies hold the change", n, namespaces)
		}
		return nil
	})
	copiesAtLive := w.countCopies(t, "")

	eventually(t, 10*time.Minute, "every copy made and the queue drained", func() error {
		if n := w.countCopies(t, ""); n != namespaces*sources {
			return fmt.Errorf("%d of %d copies", n, namespaces*sources)
		}
		if d := op.counter(t, "workqueue_depth", map[string]string{"name": "mirror"}); d != 0 {
			return fmt.Errorf("queue depth %v", d)
		}
		return nil
	})
	total := time.Since(started)
	t.Logf("live change made %v after start, with %v Mirrors queued and %d of %d copies made; all %d copies of %s held it %v later (%d copies made by then); the backlog drained %v after start; peak RSS of the test process (operator, client, mutation detector): %s",
		changed.Sub(started).Round(time.Millisecond), backlog, copiesThen, namespaces*sources, namespaces, live,
		latency.Round(time.Millisecond), copiesAtLive, total.Round(time.Millisecond), procStatus(t, "VmHWM", "VmRSS"))
	if latency > total/2 {
		t.Errorf("the live change took %v, more than half the %v the whole backlog took: it did not jump the queue", latency, total)
	}
	for _, name := range []string{"src-0", live} {
		want := map[string]string{"v": "0"}
		if name == live {
			want = map[string]string{"v": "live"}
		}
		if err := w.copiesEqual(nss[:3], name, want)(); err != nil {
			t.Error(err)
		}
	}
	if err := op.stop(); err != nil {
		t.Errorf("operator: %v", err)
	}
}

// countCopies counts the copies of the test's Mirrors, or of one.
func (w *world) countCopies(t *testing.T, name string) int {
	t.Helper()
	sel := client.MatchingLabels{mirror.LabelMirrorNamespace: w.home}
	if name != "" {
		sel[mirror.LabelMirrorName] = name
	}
	cms := &metav1.PartialObjectMetadataList{}
	cms.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := w.cl.List(context.Background(), cms, sel); err != nil {
		t.Fatal(err)
	}
	return len(cms.Items)
}

// removeLoad deletes the Mirrors (without their finalizer: the operator
// has stopped) and the copies, so that later tests' operators neither list
// them nor act on them.
func (w *world) removeLoad(nss []string) {
	ctx := context.Background()
	ms := &v1alpha1.MirrorList{}
	if err := w.cl.List(ctx, ms, client.InNamespace(w.home)); err != nil {
		w.t.Errorf("clean up: %v", err)
		return
	}
	for i := range ms.Items {
		m := &ms.Items[i]
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		if err := client.IgnoreNotFound(w.cl.Patch(ctx, m, patch)); err != nil {
			w.t.Errorf("clean up: %v", err)
		}
		if err := client.IgnoreNotFound(w.cl.Delete(ctx, m)); err != nil {
			w.t.Errorf("clean up: %v", err)
		}
	}
	for _, ns := range nss {
		if err := w.cl.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels{mirror.LabelMirrorNamespace: w.home}); err != nil {
			w.t.Errorf("clean up: %v", err)
		}
	}
}
