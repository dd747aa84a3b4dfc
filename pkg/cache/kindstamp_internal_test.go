package cache

import (
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Every object an informer ingests points at the same two strings for its
// apiVersion and kind, so setting them costs no allocation and no bytes
// per object; an object stamped elsewhere (equal strings, other memory) is
// pointed at the shared ones too.
func TestKindStampSharesItsStrings(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	k := newKindStamp(gvk)
	transform := ingestTransform(TypeOptions{}, nil, newCompactor(), k)
	a, b := &appsv1.Deployment{}, &appsv1.Deployment{}
	b.TypeMeta = metav1.TypeMeta{APIVersion: string([]byte("apps/v1")), Kind: string([]byte("Deployment"))}
	for _, d := range []*appsv1.Deployment{a, b} {
		if _, err := transform(d); err != nil {
			t.Fatal(err)
		}
		if got := d.GroupVersionKind(); got != gvk {
			t.Errorf("ingested kind = %v, want %v", got, gvk)
		}
	}
	if unsafe.StringData(a.APIVersion) != unsafe.StringData(b.APIVersion) || unsafe.StringData(a.Kind) != unsafe.StringData(b.Kind) {
		t.Error("two ingested objects hold their apiVersion and kind in memory of their own")
	}
	d := &appsv1.Deployment{}
	if n := testing.AllocsPerRun(100, func() {
		d.TypeMeta = metav1.TypeMeta{}
		k.stamp(d)
	}); n != 0 {
		t.Errorf("stamping an object allocates %v times, want 0", n)
	}
	var none *kindStamp
	none.stamp(d) // the other forms have none
}
