package cache

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
)

// A retired informer hands its handlers, in order after every earlier
// event, one delete for each object it held, and asks its ListWatch
// nothing more: whether its watch is open when it is retired and ends
// after, or it is already failing with 404s, as when the API server
// stopped serving the kind.
func TestRetiredInformerDeletesWhatItHeld(t *testing.T) {
	for _, failing := range []bool{false, true} {
		name := map[bool]string{false: "watching", true: "failing"}[failing]
		t.Run(name, func(t *testing.T) {
			c := &Cache{opts: Options{Scheme: scheme.Scheme}}
			r := newRegistration(c, regKey{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, form: typed},
				TypeOptions{}, func() runtime.Object { return &corev1.ConfigMap{} })
			lw := newFakeListWatch(configMap("a"), configMap("b"))
			var retired atomic.Bool
			inf := toolscache.NewSharedIndexInformerWithOptions(r.retirable(lw.ListWatch(), &retired), &corev1.ConfigMap{}, toolscache.SharedIndexInformerOptions{})
			ev := &orderedEvents{}
			if _, err := inf.AddEventHandler(ev); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			go inf.RunWithContext(ctx)
			defer func() {
				cancel()
				within(t, func() bool { return inf.IsStopped() })
			}()
			within(t, func() bool { return len(ev.list()) == 2 })

			if failing {
				lw.fail.Store(true)
				before := lw.calls.Load()
				lw.endWatch()
				within(t, func() bool { return lw.calls.Load() >= before+2 }) // a watch and a list refused
			}
			retired.Store(true)
			calls := lw.calls.Load()
			if !failing {
				lw.endWatch()
			}
			want := []string{"add ns/a", "add ns/b", "delete ns/a", "delete ns/b"}
			within(t, func() bool { return len(ev.list()) >= len(want) })
			got := ev.list()
			// A list's objects, and its deletes, come in no set order.
			slices.Sort(got[:min(2, len(got))])
			slices.Sort(got[min(2, len(got)):])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// One call may have passed the retired check as it was set.
			if n := lw.calls.Load(); n > calls+1 {
				t.Errorf("the retired informer made %d lists or watches", n-calls)
			}
			if keys := inf.GetStore().ListKeys(); len(keys) != 0 {
				t.Errorf("the retired informer holds %v", keys)
			}
		})
	}
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "5"}}
}

// fakeListWatch serves objs, by list or as a streaming list's initial
// events, and counts its calls; endWatch ends the latest watch.
type fakeListWatch struct {
	objs  []*corev1.ConfigMap
	calls atomic.Int64
	fail  atomic.Bool // answer every call 404
	mu    sync.Mutex
	last  *watch.FakeWatcher
}

func newFakeListWatch(objs ...*corev1.ConfigMap) *fakeListWatch {
	return &fakeListWatch{objs: objs}
}

func (f *fakeListWatch) ListWatch() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			f.calls.Add(1)
			if f.fail.Load() {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
			}
			l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
			for _, o := range f.objs {
				l.Items = append(l.Items, *o)
			}
			return l, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			f.calls.Add(1)
			if f.fail.Load() {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
			}
			w := watch.NewFakeWithChanSize(len(f.objs)+1, false)
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				for _, o := range f.objs {
					w.Add(o.DeepCopy())
				}
				w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
				}})
			}
			f.mu.Lock()
			f.last = w
			f.mu.Unlock()
			return w, nil
		},
	}
}

// endWatch ends the latest watch, as the API server ends its watches when
// it stops serving a kind.
func (f *fakeListWatch) endWatch() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil {
		f.last.Stop()
	}
}

// orderedEvents records the adds and deletes handed to it, in order.
type orderedEvents struct {
	mu     sync.Mutex
	events []string
}

func (o *orderedEvents) OnAdd(obj any, _ bool) { o.record("add", obj) }
func (o *orderedEvents) OnUpdate(_, _ any)     {}
func (o *orderedEvents) OnDelete(obj any)      { o.record("delete", obj) }

func (o *orderedEvents) record(what string, obj any) {
	key, _ := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, what+" "+key)
}

func (o *orderedEvents) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// within fails the test unless cond holds within 30s.
func within(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
