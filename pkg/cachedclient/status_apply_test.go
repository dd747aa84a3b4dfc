package cachedclient_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// A status apply is sent with the controller's field owner to the status
// subresource; an identical one is skipped once the cache holds what the
// first returned; after someone else's status write it is sent again and,
// forced, takes the field back.
func TestStatusApply(t *testing.T) {
	f := newWriterFixture(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "s"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := f.server.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	status := func() *corev1ac.PodApplyConfiguration {
		return corev1ac.Pod("s", f.ns).WithStatus(corev1ac.PodStatus().WithMessage("seen"))
	}

	first := status()
	if n := f.sent(t, func() error { return f.writer.Status().Apply(t.Context(), first) }); n != 1 {
		t.Fatalf("the first status apply sent %d requests, want 1", n)
	}
	got := f.serverPod(t)
	if got.Status.Message != "seen" {
		t.Errorf("status.message = %q after the apply, want seen", got.Status.Message)
	}
	if !slices.ContainsFunc(got.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == "mirror" && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "status"
	}) {
		t.Errorf("managedFields = %+v, want an Apply entry of manager mirror on the status subresource", got.ManagedFields)
	}
	f.waitForPodVersion(t, *first.ResourceVersion)

	again := status()
	if n := f.sent(t, func() error { return f.writer.Status().Apply(t.Context(), again) }); n != 0 {
		t.Errorf("an identical status apply sent %d requests, want 0", n)
	}
	if again.UID == nil || *again.UID != *first.UID {
		t.Errorf("a skipped status apply left the uid %v, want the object's %v, filled from the cache", again.UID, *first.UID)
	}
	if v := f.writes(t, imetrics.VerbApply, imetrics.WriteSkipped); v != 1 {
		t.Errorf("skipped applies = %v, want 1", v)
	}

	got.Status.Message = "edited"
	if err := f.server.Status().Update(t.Context(), got, crclient.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	f.waitForPodVersion(t, got.ResourceVersion)
	if n := f.sent(t, func() error { return f.writer.Status().Apply(t.Context(), status()) }); n != 1 {
		t.Errorf("the status apply after another writer's edit sent %d requests, want 1", n)
	}
	if got := f.serverPod(t); got.Status.Message != "seen" {
		t.Errorf("status.message = %q after the forced apply, want seen", got.Status.Message)
	}
}

// serverPod returns Pod s as the API server holds it.
func (f *writerFixture) serverPod(t *testing.T) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "s"}, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// waitForPodVersion waits until the cache holds Pod s at resourceVersion rv.
func (f *writerFixture) waitForPodVersion(t *testing.T, rv string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pod, err := f.pods.Get(f.ns, "s")
		return err == nil && pod.ResourceVersion == rv, nil
	})
	if err != nil {
		t.Fatalf("wait for the cache to hold Pod %s/s at resourceVersion %s: %v", f.ns, rv, err)
	}
}
