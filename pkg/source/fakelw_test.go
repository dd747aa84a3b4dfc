package source_test

import (
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// fakeLW is an in-memory ListerWatcher of ConfigMaps. It answers a plain
// List with its initial objects, and a Watch that asks for initial events
// (client-go v0.37 streams lists by default) with those objects as Added
// events and the bookmark that ends the initial list; without that
// bookmark an informer waits forever. Later, every event sent on events
// goes to the current watch.
type fakeLW struct {
	initial []corev1.ConfigMap
	rv      string // the resourceVersion of the initial list
	events  chan watch.Event

	mu      sync.Mutex
	watches []*fakeWatch
}

var _ toolscache.ListerWatcher = (*fakeLW)(nil)

func newFakeLW(initial []corev1.ConfigMap, rv int) *fakeLW {
	return &fakeLW{initial: initial, rv: strconv.Itoa(rv), events: make(chan watch.Event, 1024)}
}

func (f *fakeLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: f.rv}, Items: f.initial}, nil
}

func (f *fakeLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	w := &fakeWatch{ch: make(chan watch.Event), stop: make(chan struct{})}
	f.mu.Lock()
	f.watches = append(f.watches, w)
	f.mu.Unlock()
	w.wg.Add(1)
	go w.run(f, opts.SendInitialEvents != nil && *opts.SendInitialEvents)
	return w, nil
}

// stop ends every watch and waits for their goroutines.
func (f *fakeLW) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		w.Stop()
		w.wg.Wait()
	}
}

type fakeWatch struct {
	ch       chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func (w *fakeWatch) run(f *fakeLW, initial bool) {
	defer w.wg.Done()
	defer close(w.ch)
	if initial {
		for i := range f.initial {
			if !w.send(watch.Event{Type: watch.Added, Object: f.initial[i].DeepCopy()}) {
				return
			}
		}
		end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: f.rv,
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}
		if !w.send(watch.Event{Type: watch.Bookmark, Object: end}) {
			return
		}
	}
	for {
		select {
		case <-w.stop:
			return
		case e := <-f.events:
			if !w.send(e) {
				return
			}
		}
	}
}

func (w *fakeWatch) send(e watch.Event) bool {
	select {
	case w.ch <- e:
		return true
	case <-w.stop:
		return false
	}
}

func (w *fakeWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.ch }

// configMap returns a ConfigMap with the given resourceVersion.
func configMap(ns, name string, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(rv)}}
}
