package informer_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2"

	"github.com/opkit-dev/opkit/internal/informer"
)

// An informer stopped while its watch request is on its way ends that
// request canceled, on purpose: client-go's default handler logged it as
// an error, "Failed to watch ... context canceled", at every slot move of
// a sharded cache. Stopping is not a failure, and logs none.
func TestStoppingLogsNoWatchFailure(t *testing.T) {
	state := klog.CaptureState()
	defer state.Restore()
	var out lockedBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&out)

	src := fcache.NewFakeControllerSource()
	src.Add(configMap("a", "1"))
	opened := make(chan struct{})
	var once sync.Once
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return src.List(opts)
		},
		// A streaming list is refused, as by an API server without it;
		// every watch after the list is on its way until the informer
		// stops.
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				return nil, apierrors.NewBadRequest("no streaming lists here")
			}
			once.Do(func() { close(opened) })
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	inf := informer.New(lw, &corev1.ConfigMap{}, informer.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		inf.RunWithContext(ctx)
		close(done)
	}()
	select {
	case <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer opened no watch")
	}
	cancel()
	<-done
	klog.Flush()
	if strings.Contains(out.String(), "Failed to watch") {
		t.Errorf("stopping the informer logged a watch failure:\n%s", out.String())
	}
}

// lockedBuffer is a buffer that klog's writer and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
