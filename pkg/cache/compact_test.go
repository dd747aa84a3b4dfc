package cache

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func replica(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", i), Namespace: "shop",
			Labels:          map[string]string{"app": "web", "hash": "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "u-1", Controller: new(true)}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "web:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
}

// Replicas share their label and resource maps and their strings, and stay
// equal to what they were.
func TestCompactorShares(t *testing.T) {
	c := newCompactor()
	a, b := replica(1), replica(2)
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	c.compact(a)
	c.compact(b)
	if diff := cmp.Diff(wantA, a); diff != "" {
		t.Errorf("compaction changed a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, b); diff != "" {
		t.Errorf("compaction changed b (-want +got):\n%s", diff)
	}
	if fmt.Sprintf("%p", a.Labels) != fmt.Sprintf("%p", b.Labels) {
		t.Error("equal label maps not shared")
	}
	ra, rb := a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests
	if fmt.Sprintf("%p", ra) != fmt.Sprintf("%p", rb) {
		t.Error("equal resource lists not shared")
	}
	if unsafeData(a.Spec.Containers[0].Image) != unsafeData(b.Spec.Containers[0].Image) {
		t.Error("equal images not shared")
	}
	if &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("equal owner references not shared")
	}
	if a.OwnerReferences[0].Controller != c.yes {
		t.Error("owner reference's Controller not the shared true")
	}

	// Different maps and owner references stay different.
	b2 := replica(3)
	b2.Labels["hash"] = "def"
	b2.OwnerReferences[0].Controller = new(false)
	c.compact(b2)
	if b2.Labels["hash"] != "def" || a.Labels["hash"] != "abc" {
		t.Errorf("labels mixed up: %v, %v", a.Labels, b2.Labels)
	}
	if *b2.OwnerReferences[0].Controller || !*a.OwnerReferences[0].Controller {
		t.Errorf("owner references mixed up: %v, %v", a.OwnerReferences, b2.OwnerReferences)
	}
}

// The tables start again past maxShared entries instead of growing forever.
func TestCompactorBounded(t *testing.T) {
	c := newCompactor()
	for i := range 3 * maxShared {
		p := replica(i)
		p.Labels = map[string]string{"i": fmt.Sprint(i)}
		p.OwnerReferences[0].UID = types.UID(fmt.Sprint(i))
		c.compact(p)
	}
	if len(c.maps) > maxShared || len(c.strs) > maxShared || len(c.refs) > maxShared {
		t.Errorf("tables hold %d maps, %d strings and %d owner references, want at most %d", len(c.maps), len(c.strs), len(c.refs), maxShared)
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }

// ConfigMaps share their data's keys.
func TestCompactorSharesConfigMapData(t *testing.T) {
	c := newCompactor()
	data := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: "shop"},
			Data: map[string]string{
				string([]byte("LOG_LEVEL")): string([]byte("info")),
				string([]byte("config")):    strings.Repeat("x", 100),
			},
		}
	}
	a, b := data(1), data(2)
	want := b.DeepCopy()
	c.compact(a)
	c.compact(b)
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("compaction changed b (-want +got):\n%s", diff)
	}
	key := func(m map[string]string, k string) string {
		for mk := range m {
			if mk == k {
				return mk
			}
		}
		return ""
	}
	for _, k := range []string{"LOG_LEVEL", "config"} {
		if unsafeData(key(a.Data, k)) != unsafeData(key(b.Data, k)) {
			t.Errorf("equal data keys %q not shared", k)
		}
	}
}
