package mirror_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// A Mirror whose ServiceAccount may not get its source copies nothing:
// its Ready condition (SyncFailed) and a Warning Event say so, naming the
// verb and the resource, though the operator's own permissions, which
// list every ConfigMap, would have let it read the source itself.
func TestSourceThatCannotBeFetchedIsReported(t *testing.T) {
	w := operator(t)
	ns := w.namespace(map[string]string{"team": "a"})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: w.home},
		Spec: v1alpha1.MirrorSpec{
			Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "cfg"}, NamespaceSelector: w.selecting(map[string]string{"team": "a"}),
			ServiceAccountName: "granted-nothing",
		},
	}
	w.create(m)
	// A Mirror that fails for good would make later tests' operators,
	// which watch every namespace, retry it: it goes before this
	// operator stops.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := w.cl.Delete(ctx, m); err != nil {
			t.Errorf("delete the Mirror: %v", err)
			return
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(w.cl.Get(ctx, client.ObjectKeyFromObject(m), &v1alpha1.Mirror{})), nil
		})
		if err != nil {
			t.Errorf("the Mirror was not deleted: %v", err)
		}
	})

	w.eventually("SyncFailed", w.ready(m, v1alpha1.ReasonSyncFailed, 0))
	w.eventually("a SyncFailed Event", w.event(m, v1alpha1.ReasonSyncFailed))
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message
	for _, want := range []string{"system:serviceaccount:" + w.home + ":granted-nothing", `cannot get resource "configmaps"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready's message %q does not mention %s", msg, want)
		}
	}
	if _, err := w.copyData(ns, "cfg"); err == nil {
		t.Error("a copy was made of a source the Mirror's ServiceAccount may not read")
	}
}
