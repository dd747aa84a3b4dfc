package source_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/go-logr/logr"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// panics records the panics an observer is told of.
type panics struct {
	mu  sync.Mutex
	got []*source.HandlerPanic
}

func (p *panics) observe(hp *source.HandlerPanic) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, hp)
}

// A panic of a predicate, a handler or a map function is recovered and
// reported with the object's key; the event is dropped and the next one
// is handled.
func TestHandlerPanicRecovered(t *testing.T) {
	bomb := func(cm *corev1.ConfigMap) bool { return cm.Name == "bomb" }
	tests := []struct {
		name  string
		src   func(inf *fakeInformer) source.Source[reconcile.Request]
		value string
	}{
		{"predicate", func(inf *fakeInformer) source.Source[reconcile.Request] {
			return source.NewInformer(inf, source.EnqueueObject[*corev1.ConfigMap](),
				func(e source.Event[*corev1.ConfigMap]) bool {
					if bomb(e.Object) {
						panic("predicate bomb")
					}
					return true
				})
		}, "predicate bomb"},
		{"map function", func(inf *fakeInformer) source.Source[reconcile.Request] {
			return source.NewInformer(inf, source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
				if bomb(cm) {
					panic("map bomb")
				}
				return []reconcile.Request{req(cm.Namespace, cm.Name)}
			}))
		}, "map bomb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inf := newFakeInformer()
			q := newQueue[reconcile.Request](t)
			var p panics
			if err := tt.src(inf).Start(source.WithPanicObserver(t.Context(), p.observe), q); err != nil {
				t.Fatal(err)
			}
			h := inf.events()
			h.OnAdd(configMap("ns", "bomb", 1), false)
			h.OnUpdate(configMap("ns", "bomb", 1), configMap("ns", "bomb", 2))
			h.OnAdd(configMap("ns", "fine", 1), false)
			if diff := cmp.Diff([]item{normal("ns", "fine")}, drain(q)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
			if len(p.got) != 2 {
				t.Fatalf("observer told of %d panics, want 2", len(p.got))
			}
			got := p.got[1]
			if got.Event != "update" || got.Namespace != "ns" || got.Name != "bomb" || got.Value != tt.value ||
				got.Type != "*v1.ConfigMap" || !strings.Contains(string(got.Stack), "recover_test.go") {
				t.Errorf("HandlerPanic = %+v, want the update of ns/bomb, %q, type *v1.ConfigMap, with a stack", got, tt.value)
			}
			if msg := got.Error(); !strings.Contains(msg, "ns/bomb") || !strings.Contains(msg, tt.value) {
				t.Errorf("Error() = %q, want the key and the value", msg)
			}
		})
	}
}

// Without an observer, a recovered panic goes to the logger of Start's
// context, with its stack.
func TestHandlerPanicLogged(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	inf := newFakeInformer()
	q := newQueue[reconcile.Request](t)
	src := source.NewInformer(inf, source.EnqueueMapped(func(*corev1.ConfigMap) []reconcile.Request { panic("boom") }))
	if err := src.Start(logr.NewContext(t.Context(), log), q); err != nil {
		t.Fatal(err)
	}
	inf.events().OnDelete(configMap("ns", "a", 1))
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.Contains(lines[0], "Handler panicked") || !strings.Contains(lines[0], `"name"="a"`) ||
		!strings.Contains(lines[0], "boom") || !strings.Contains(lines[0], "stack") {
		t.Errorf("logged %q, want one line naming the panic, the object and the stack", lines)
	}
}

// A panic of a Channel's map function drops that value; the channel is
// read on.
func TestChannelMapPanicRecovered(t *testing.T) {
	verifyNoLeaks(t)
	ch := make(chan string)
	q := newQueue[reconcile.Request](t)
	var p panics
	src := source.MapChannel(ch, func(s string) []reconcile.Request {
		if s == "bomb" {
			panic("channel bomb")
		}
		return []reconcile.Request{req("ns", s)}
	})
	ctx, cancel := context.WithCancel(source.WithPanicObserver(t.Context(), p.observe))
	defer cancel()
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	ch <- "bomb"
	ch <- "fine"
	k, _, _ := q.Get()
	q.Done(k)
	if k != req("ns", "fine") {
		t.Errorf("got %v, want ns/fine", k)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) != 1 || p.got[0].Value != "channel bomb" || p.got[0].Event != "receive" || p.got[0].Type != "string" {
		t.Errorf("observer told of %+v, want the channel bomb", p.got)
	}
}
