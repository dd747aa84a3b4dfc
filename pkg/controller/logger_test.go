package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A controller built without a Logger logs through klog, as client-go
// does, so a failed reconcile is seen rather than discarded.
func TestDefaultLoggerPrints(t *testing.T) {
	state := klog.CaptureState()
	defer state.Restore()
	var out syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&out)

	ctx, stop := context.WithCancel(t.Context())
	r := reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		stop()
		return reconcile.Done(), errors.New("the source is gone")
	})
	c, err := controller.New("default-logger", r, controller.Options[reconcile.Request]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(&keys{keys: []reconcile.Request{req("a")}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	klog.Flush()
	for _, want := range []string{"Reconcile failed", "the source is gone", `controller="default-logger"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("klog's output lacks %q:\n%s", want, out.String())
		}
	}
}
