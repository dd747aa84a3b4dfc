package cache

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestEncodedSize(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}, Data: map[string]string{"k": "value"}}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{"x": "y"}}}
	uJSON, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	pom := &metav1.PartialObjectMetadata{ObjectMeta: cm.ObjectMeta}
	for _, tt := range []struct {
		name string
		obj  any
		want int
		ok   bool
	}{
		{"typed: protobuf", cm, cm.Size(), true},
		{"metadata: protobuf", pom, pom.Size(), true},
		{"unstructured: JSON", u, len(uJSON), true},
		{"tombstone: none", toolscache.DeletedFinalStateUnknown{Key: "n/a", Obj: cm}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := encodedSize(tt.obj)
			if got != tt.want || ok != tt.ok {
				t.Errorf("encodedSize = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The mean is exact over the warm-up, then samples one object in
// sizeSampleEvery and follows the sizes it sees.
func TestSizesSample(t *testing.T) {
	s := newSizes()
	small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	large := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": string(make([]byte, 1000))}}
	for range sizeWarmup {
		s.observe(small)
	}
	if got := s.mean(); got != float64(small.Size()) {
		t.Fatalf("mean after the warm-up = %v, want %d", got, small.Size())
	}
	for range sizeSampleEvery - 1 {
		s.observe(large) // not sampled
	}
	if got := s.mean(); got != float64(small.Size()) {
		t.Fatalf("mean after %d objects past the warm-up = %v, want still %d: they are not sampled", sizeSampleEvery-1, got, small.Size())
	}
	for range 100 * sizeSampleEvery {
		s.observe(large)
	}
	if got, want := s.mean(), float64(large.Size()); got < 0.99*want || got > want {
		t.Errorf("mean after 100 samples of %d bytes = %v, want it to have followed them", large.Size(), got)
	}
	var none *sizes
	if got := none.mean(); got != 0 {
		t.Errorf("mean of no sampler = %v, want 0", got)
	}
}
