package cache

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A watch-list transforms each object twice: once into the reflector's
// temporary store, then again when the store is replaced into the FIFO
// (client-go's RealFIFO says the transform must be idempotent). The second
// pass must write nothing, since the mutation detector reads the object
// the first pass recorded meanwhile; -race failed here when it wrote the
// same values again.
func TestIngestTwiceWritesNothing(t *testing.T) {
	d := newDetector(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, nil)
	transform := d.wrap(ingestTransform(TypeOptions{}, nil, newCompactor(), newKindStamp(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p", GenerateName: "p-",
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{lastAppliedAnnotation: "{}", "a": "b"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u"}},
			Finalizers:      []string{"f"},
		},
		Spec: corev1.PodSpec{
			NodeName: "node", NodeSelector: map[string]string{"disk": "ssd"},
			Containers: []corev1.Container{{
				Name: "c", Image: "img", Command: []string{"run"}, Env: []corev1.EnvVar{{Name: "K", Value: "V"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
			Tolerations: []corev1.Toleration{{Key: "k", Value: "v"}},
		},
		Status: corev1.PodStatus{HostIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "img"}}},
	}
	if _, err := transform(pod); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if errs := d.check(); len(errs) > 0 {
					t.Errorf("the second pass modified the object: %v", errs[0])
					return
				}
			}
		}
	})
	for range 50 {
		if _, err := transform(pod); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
