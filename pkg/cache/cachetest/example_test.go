package cachetest_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cache/cachetest"
)

// caBundle is the code under test: it reads through a *cache.Lister, as it
// does in production.
type caBundle struct {
	configMaps *cache.Lister[*corev1.ConfigMap]
}

func (c caBundle) bundle(namespace string) (string, error) {
	cm, err := c.configMaps.Get(namespace, "ca-bundle")
	if apierrors.IsNotFound(err) {
		return "(none yet)", nil
	}
	if err != nil {
		return "", err
	}
	return cm.Data["ca.crt"], nil
}

// A unit test builds the Lister from objects in memory, then changes what it
// holds to see how the code under test reacts. In a test function,
// cachetest.NewLister(t, objs...) is shorter when the contents stay fixed.
func Example() {
	store, err := cachetest.New(cachetest.Options{}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle"},
		Data:       map[string]string{"ca.crt": "v1"},
	})
	if err != nil {
		panic(err)
	}
	c := caBundle{configMaps: store.Lister()}
	fmt.Println(c.bundle("platform"))

	err = store.Update(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle"},
		Data:       map[string]string{"ca.crt": "v2"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.bundle("platform"))

	if err := store.Delete("platform", "ca-bundle"); err != nil {
		panic(err)
	}
	fmt.Println(c.bundle("platform"))
	fmt.Println(store.CheckMutations()) // nil: nothing wrote into the store's objects
	// Output:
	// v1 <nil>
	// v2 <nil>
	// (none yet) <nil>
	// <nil>
}

// Lists are sorted by namespace, then name, as a cache's are; an index added
// after the objects indexes them too.
func ExampleNew_index() {
	store, err := cachetest.New(cachetest.Options{},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "web", Labels: map[string]string{"tier": "front"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", Labels: map[string]string{"tier": "front"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db", Labels: map[string]string{"tier": "back"}}},
	)
	if err != nil {
		panic(err)
	}
	l := store.Lister()
	if err := l.AddIndex("tier", func(c *corev1.ConfigMap) []string { return []string{c.Labels["tier"]} }); err != nil {
		panic(err)
	}
	front, err := l.ByIndex("tier", "front")
	if err != nil {
		panic(err)
	}
	for _, c := range front {
		fmt.Println(c.Namespace+"/"+c.Name, c.ResourceVersion)
	}
	// Output:
	// a/web 2
	// b/web 1
}

// A test of the code's error path makes one read fail, as a test of a
// controller-runtime reconciler does with interceptor.Funcs on its fake
// client. Every other read goes to the store.
func ExampleOptions_readError() {
	unavailable := errors.New("etcd is on fire")
	store, err := cachetest.New(cachetest.Options{
		ReadError: func(verb, namespace, name string) error {
			if verb == "get" && namespace == "broken" {
				return unavailable
			}
			return nil
		},
	},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle"}, Data: map[string]string{"ca.crt": "v1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "broken", Name: "ca-bundle"}, Data: map[string]string{"ca.crt": "v1"}},
	)
	if err != nil {
		panic(err)
	}
	c := caBundle{configMaps: store.Lister()}
	fmt.Println(c.bundle("platform"))
	_, err = c.bundle("broken")
	fmt.Println(errors.Is(err, unavailable))
	// Output:
	// v1 <nil>
	// true
}
