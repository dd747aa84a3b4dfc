package cachetest_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
)

// read is what Options.ReadError was asked about.
type read struct{ verb, namespace, name string }

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "owner", UID: "uid-owner"}}
	for _, tc := range []struct {
		name string
		read func(*cache.Lister[*corev1.ConfigMap]) error
		want read
	}{
		{"Get", func(l *cache.Lister[*corev1.ConfigMap]) error { _, err := l.Get("a", "x"); return err },
			read{"get", "a", "x"}},
		{"List of a namespace", func(l *cache.Lister[*corev1.ConfigMap]) error { _, err := l.List("a", nil); return err },
			read{"list", "a", ""}},
		{"List of every namespace", func(l *cache.Lister[*corev1.ConfigMap]) error { _, err := l.List("", nil); return err },
			read{"list", "", ""}},
		{"ByIndex", func(l *cache.Lister[*corev1.ConfigMap]) error { _, err := l.ByIndex("app", "web"); return err },
			read{"list", "", ""}},
		{"ByIndexInNamespace", func(l *cache.Lister[*corev1.ConfigMap]) error {
			_, err := l.ByIndexInNamespace("a", "app", "web")
			return err
		}, read{"list", "a", ""}},
		{"ControlledBy", func(l *cache.Lister[*corev1.ConfigMap]) error { _, err := l.ControlledBy(owner); return err },
			read{"list", "a", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []read
			var fail error
			s, err := cachetest.New(cachetest.Options{ReadError: func(verb, namespace, name string) error {
				asked = append(asked, read{verb, namespace, name})
				return fail
			}}, cm("a", "x", map[string]string{"app": "web"}))
			if err != nil {
				t.Fatal(err)
			}
			cachetest.CheckMutationsAtCleanup(t, s)
			l := s.Lister()
			if err := l.AddIndex("app", func(c *corev1.ConfigMap) []string { return []string{c.Labels["app"]} }); err != nil {
				t.Fatal(err)
			}

			if err := tc.read(l); err != nil {
				t.Fatalf("with ReadError returning nil: %v, want the store read", err)
			}
			fail = boom
			if err := tc.read(l); err != boom {
				t.Errorf("with ReadError returning boom: %v, want boom itself", err)
			}
			if diff := cmp.Diff([]read{tc.want, tc.want}, asked, cmp.AllowUnexported(read{})); diff != "" {
				t.Errorf("ReadError was asked (-want +got):\n%s", diff)
			}
		})
	}
}

// An injected NotFound reads as the absence of the object, so a test can
// hide one object of a store from a single Get.
func TestReadErrorNotFound(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	s, err := cachetest.New(cachetest.Options{ReadError: func(verb, namespace, name string) error {
		if verb == "get" && name == "x" {
			return gone
		}
		return nil
	}}, cm("a", "x", nil), cm("a", "y", nil))
	if err != nil {
		t.Fatal(err)
	}
	l := s.Lister()
	if _, err := l.Get("a", "x"); !apierrors.IsNotFound(err) {
		t.Errorf("Get a/x = %v, want NotFound", err)
	}
	if _, err := l.Get("a", "y"); err != nil {
		t.Errorf("Get a/y = %v, want it read", err)
	}
	if got, err := l.List("a", nil); err != nil || len(got) != 2 {
		t.Errorf("List a = %d objects, %v; want both: only Gets of x fail", len(got), err)
	}
}
