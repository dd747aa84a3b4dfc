package cache

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
)

// A store whose type was removed refuses reads and writes with ErrRemoved.
func TestRemovedStore(t *testing.T) {
	s, err := newStatic(reflect.TypeFor[*corev1.ConfigMap](), cacheaccess.StoreOptions{Mapper: testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme)})
	if err != nil {
		t.Fatal(err)
	}
	l := &Lister[*corev1.ConfigMap]{reg: s.(*static).reg}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
	}
	if err := s.Add(cm("x")); err != nil {
		t.Fatal(err)
	}
	l.remove()
	if _, err := l.Get("a", "x"); !errors.Is(err, ErrRemoved) {
		t.Errorf("Get after remove = %v, want ErrRemoved", err)
	}
	if err := s.Add(cm("y")); !errors.Is(err, ErrRemoved) {
		t.Errorf("Add after remove = %v, want ErrRemoved", err)
	}
}
