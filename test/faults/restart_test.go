package faults

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// copyUIDs returns the UID of every copy of the test's Mirrors.
func (w *world) copyUIDs() (map[string]types.UID, error) {
	cms := &corev1.ConfigMapList{}
	if err := w.cl.List(w.t.Context(), cms, client.MatchingLabels{mirror.LabelMirrorNamespace: w.home}); err != nil {
		return nil, err
	}
	out := map[string]types.UID{}
	for _, cm := range cms.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.UID
	}
	return out, nil
}

// kube-apiserver restarts (same etcd, same port) under a running operator.
// The operator reconnects, and the copies converge to the sources as
// changed after the restart. No copy is deleted and recreated on the way,
// as one would be if a reconcile acted on a cache that had lost
// namespaces or copies.
func TestAPIServerRestart(t *testing.T) {
	w := newWorld(t)
	nss := w.namespaces(8)
	op := startOperator(t, opOptions{manager: manager.Options{Health: manager.HealthOptions{BindAddress: "127.0.0.1:0"}}})
	const mirrors = 4
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
	}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}
	uids, err := w.copyUIDs()
	if err != nil {
		t.Fatal(err)
	}
	restarts, relists := op.counter(t, imetrics.CacheWatchRestarts, nil), op.counter(t, imetrics.CacheRelists, nil)

	stopPoll := readiness("http://" + op.mgr.HealthProbeAddr() + "/readyz")
	var wg sync.WaitGroup
	var restartErr error
	var down time.Duration
	wg.Go(func() {
		start := time.Now()
		restartErr = env.RestartAPIServer()
		down = time.Since(start)
	})
	wg.Wait()
	during := stopPoll()
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	back := time.Now()
	for i := range mirrors {
		if err := w.setData(w.home, fmt.Sprintf("src-%d", i), map[string]string{"v": "1"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the restart", w.copiesEqual(nss, name, map[string]string{"v": "1"}))
	}
	converged := time.Since(back)
	t.Logf("kube-apiserver was restarted in %v (/readyz answers meanwhile: %v); the copies converged %v after it was back; watch restarts %v -> %v, relists %v -> %v",
		down.Round(time.Millisecond), during, converged.Round(time.Millisecond),
		restarts, op.counter(t, imetrics.CacheWatchRestarts, nil), relists, op.counter(t, imetrics.CacheRelists, nil))
	if op.counter(t, imetrics.CacheWatchRestarts, nil) <= restarts {
		t.Errorf("no informer rewatched after the restart")
	}
	after, err := w.copyUIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(uids, after) {
		t.Errorf("copies were deleted or recreated across the restart: before %v, after %v", uids, after)
	}
	select {
	case err := <-op.done:
		t.Fatalf("the operator stopped: %v", err)
	default:
	}
}
