package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// A failed watch is named by its resource, and its repeats are logged at
// V(1), whether the failure comes before the type's informers are stored
// in its view or after: they start, and can fail, first. Before, the
// first failure named the kind ("/v1, Kind=ConfigMap") and the next the
// resource, so the same failure was logged twice at V(0).
func TestListWatchErrorNamedOnceBeforeAndAfterTheView(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{Verbosity: 1})
	c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Namespaces: []string{"ns"}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Register[*corev1.ConfigMap](c, TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	r := c.regs[0]
	resource := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// What newView does before it starts the informers.
	r.mu.Lock()
	r.mapping = &meta.RESTMapping{Resource: resource, Scope: meta.RESTScopeNamespace}
	r.mu.Unlock()
	forbidden := apierrors.NewForbidden(resource.GroupResource(), "", errors.New("denied"))

	r.recordListWatch(context.Background(), "watch", "ns", forbidden)
	first := r.lastErr.Error()
	r.view.Store(&view{resource: resource})
	r.recordListWatch(context.Background(), "watch", "ns", forbidden)
	if !strings.Contains(first, "watch configmaps in namespace ns") || r.lastErr.Error() != first {
		t.Errorf("before the view: %q; after: %q; want both to name the watch of configmaps in namespace ns", first, r.lastErr)
	}
	mu.Lock()
	defer mu.Unlock()
	v0 := 0
	for _, l := range logged {
		if strings.Contains(l, `"msg"="List or watch failed"`) {
			v0++
		}
	}
	if v0 != 1 {
		t.Errorf("logged at V(0) %d times, want once:\n%s", v0, strings.Join(logged, "\n"))
	}
}
