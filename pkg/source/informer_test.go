package source_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// verifyNoLeaks checks, once the test and its other cleanups are done, that
// it left no goroutine running.
func verifyNoLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// Every informer callback becomes one event at the right priority;
// tombstones are unwrapped, and what is not a T is dropped.
func TestInformerEvents(t *testing.T) {
	verifyNoLeaks(t)
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	h := inf.events()
	one, two := configMap("ns", "a", 1), configMap("ns", "a", 2)
	steps := []struct {
		name string
		call func()
		want []item
	}{
		{"initial add", func() { h.OnAdd(one, true) }, []item{low("ns", "a")}},
		{"live add", func() { h.OnAdd(one, false) }, []item{normal("ns", "a")}},
		{"update", func() { h.OnUpdate(one, two) }, []item{normal("ns", "a")}},
		{"resync", func() { h.OnUpdate(two, two) }, []item{low("ns", "a")}},
		{"delete", func() { h.OnDelete(two) }, []item{normal("ns", "a")}},
		{"tombstone", func() { h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: two}) }, []item{normal("ns", "a")}},
		{"empty tombstone", func() { h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/a"}) }, nil},
		{"another type", func() { h.OnAdd(&corev1.Secret{}, false) }, nil},
	}
	for _, s := range steps {
		s.call()
		if diff := cmp.Diff(s.want, drain(q)); diff != "" {
			t.Errorf("%s: queued (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestInformerPredicates(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap](),
		source.LabelSelector[*corev1.ConfigMap](labels.SelectorFromSet(labels.Set{"app": "a"})),
		source.ResourceVersionChanged)
	if err := src.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	h := inf.events()
	match, other := cmWith(1, 0, map[string]string{"app": "a"}, nil), configMap("ns", "b", 1)
	h.OnAdd(match, false)
	h.OnAdd(other, false)
	h.OnUpdate(match, match)
	if diff := cmp.Diff([]item{normal("ns", "cm")}, drain(q)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

// After its context ends, a source detaches and queues nothing more.
func TestInformerStop(t *testing.T) {
	verifyNoLeaks(t)
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	ctx, cancel := context.WithCancel(t.Context())
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-inf.removed
	inf.events().OnAdd(configMap("ns", "a", 1), false)
	if got := drain(q); len(got) != 0 {
		t.Errorf("queued %v after the context ended", got)
	}
}

func TestInformerStartErrors(t *testing.T) {
	q := newQueue[reconcile.Request](t)
	handler := source.EnqueueObject[*corev1.ConfigMap]()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		src  *source.Informer[*corev1.ConfigMap, reconcile.Request]
		ctx  context.Context
		q    *queue.Queue[reconcile.Request]
		want string
	}{
		{"nil informer", source.NewInformer(nil, handler), t.Context(), q, "the informer is nil"},
		{"nil handler", source.NewInformer[*corev1.ConfigMap, reconcile.Request](newFakeInformer(), nil), t.Context(), q, "the handler is nil"},
		{"nil queue", source.NewInformer(newFakeInformer(), handler), t.Context(), nil, "the queue is nil"},
		{"ended context", source.NewInformer(newFakeInformer(), handler), canceled, q, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.src.Start(tt.ctx, tt.q)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "source.Informer[*v1.ConfigMap]") {
				t.Errorf("Start() = %v, want an error naming the source and saying %q", err, tt.want)
			}
		})
	}
}

func TestStartTwice(t *testing.T) {
	q := newQueue[reconcile.Request](t)
	sources := map[string]source.Source[reconcile.Request]{
		"Informer": source.NewInformer(newFakeInformer(), source.EnqueueObject[*corev1.ConfigMap]()),
		"Channel":  source.NewChannel(make(chan reconcile.Request)),
		"Periodic": source.NewPeriodic(time.Hour, func(context.Context) []reconcile.Request { return nil }, source.PeriodicOptions{}),
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if err := src.Start(ctx, q); err != nil {
				t.Fatal(err)
			}
			if err := src.Start(ctx, q); err == nil || !strings.Contains(err.Error(), "already started") {
				t.Errorf("second Start() = %v, want an error saying it is already started", err)
			}
		})
	}
}

// WaitForSync waits for the handler's registration, and otherwise fails
// with an error that names the source and wraps the context's cause.
func TestInformerWaitForSync(t *testing.T) {
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.WaitForSync(t.Context()); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("WaitForSync before Start = %v, want an error saying it is not started", err)
	}
	if err := src.Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	err := src.WaitForSync(ctx)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), src.String()) {
		t.Errorf("WaitForSync() = %v, want an error naming %s and wrapping %v", err, src, cause)
	}
	inf.reg.synced.Store(true)
	if err := src.WaitForSync(t.Context()); err != nil {
		t.Errorf("WaitForSync() once synced = %v", err)
	}
}

// Through a real SharedIndexInformer: the initial list (a streaming list)
// goes in at low priority, live events at normal priority.
func TestInformerPriorities(t *testing.T) {
	verifyNoLeaks(t)
	lw := newFakeLW([]corev1.ConfigMap{*configMap("ns", "a", 1), *configMap("ns", "b", 1)}, 1)
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		lw.stop()
	})
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap]())
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { inf.RunWithContext(ctx) })
	if err := src.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]item{low("ns", "a"), low("ns", "b")}, drain(q)); diff != "" {
		t.Errorf("initial list queued (-want +got):\n%s", diff)
	}
	steps := []struct {
		event watch.Event
		want  item
	}{
		{watch.Event{Type: watch.Modified, Object: configMap("ns", "a", 2)}, normal("ns", "a")},
		{watch.Event{Type: watch.Added, Object: configMap("ns", "c", 3)}, normal("ns", "c")},
		{watch.Event{Type: watch.Deleted, Object: configMap("ns", "b", 4)}, normal("ns", "b")},
	}
	for _, s := range steps {
		lw.events <- s.event
		k, p, _ := q.Get()
		q.Done(k)
		if diff := cmp.Diff(s.want, item{k, p}); diff != "" {
			t.Errorf("%s: queued (-want +got):\n%s", s.event.Type, diff)
		}
	}
}

func TestKindWithoutLister(t *testing.T) {
	src := source.NewKind[*corev1.ConfigMap](nil, source.EnqueueObject[*corev1.ConfigMap]())
	if got, want := src.String(), "source.Kind[*v1.ConfigMap] of an unknown kind"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	err := src.Start(t.Context(), newQueue[reconcile.Request](t))
	if want := "start source.Kind[*v1.ConfigMap] of an unknown kind: the Lister is nil"; err == nil || err.Error() != want {
		t.Errorf("Start() = %v, want %q", err, want)
	}
}
