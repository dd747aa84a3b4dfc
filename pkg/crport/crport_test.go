package crport_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/crport"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// A controller-runtime reconciler keeps its meaning on opkit: the request
// it is given, its requeues, and its terminal errors.
func TestReconciler(t *testing.T) {
	for _, tt := range []struct {
		name     string
		res      crreconcile.Result
		err      error
		after    time.Duration
		requeue  bool
		terminal bool
	}{
		{name: "done"},
		{name: "requeue after", res: crreconcile.Result{RequeueAfter: time.Minute}, after: time.Minute, requeue: true},
		{name: "requeue", res: crreconcile.Result{Requeue: true}, requeue: true}, //lint:ignore SA1019 what ported code sets
		{name: "error", err: errors.New("boom")},
		{name: "terminal", err: crreconcile.TerminalError(errors.New("bad spec")), terminal: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got crreconcile.Request
			r := crport.Reconciler(crreconcile.Func(func(_ context.Context, req crreconcile.Request) (crreconcile.Result, error) {
				got = req
				return tt.res, tt.err
			}))
			res, err := r.Reconcile(t.Context(), reconcile.Request{Namespace: "ns", Name: "a"})
			if got.Namespace != "ns" || got.Name != "a" {
				t.Errorf("the reconciler got %v, want ns/a", got)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
			if terminal := errors.Is(err, reconcile.ErrTerminal); terminal != tt.terminal {
				t.Errorf("error %v: terminal %v, want %v", err, terminal, tt.terminal)
			}
			after, requeue := res.Requeue()
			if requeue != tt.requeue || after != tt.after {
				t.Errorf("result %v: requeue %v after %v, want %v after %v", res, requeue, after, tt.requeue, tt.after)
			}
		})
	}
}

// controller-runtime's predicates see the events they would have seen,
// and all must pass.
func TestPredicate(t *testing.T) {
	cm := func(gen int64) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: gen, Labels: map[string]string{"app": "x"}}}
	}
	gen := crport.Predicate[*corev1.ConfigMap](predicate.GenerationChangedPredicate{})
	if !gen(source.Event[*corev1.ConfigMap]{Type: source.Create, Object: cm(1)}) {
		t.Error("GenerationChangedPredicate refused a create")
	}
	if gen(source.Event[*corev1.ConfigMap]{Type: source.Update, Old: cm(1), Object: cm(1)}) {
		t.Error("GenerationChangedPredicate let through an update of the same generation")
	}
	if !gen(source.Event[*corev1.ConfigMap]{Type: source.Update, Old: cm(1), Object: cm(2)}) {
		t.Error("GenerationChangedPredicate refused a new generation")
	}
	var unknown bool
	del := crport.Predicate[*corev1.ConfigMap](predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
		unknown = e.DeleteStateUnknown
		return true
	}})
	if !del(source.Event[*corev1.ConfigMap]{Type: source.Delete, Object: cm(1), StateUnknown: true}) || !unknown {
		t.Error("a delete whose final state was missed did not reach the predicate as one")
	}
	both := crport.Predicate[*corev1.ConfigMap](predicate.GenerationChangedPredicate{}, predicate.NewPredicateFuncs(func(o crclient.Object) bool {
		return o.GetLabels()["app"] == "y"
	}))
	if both(source.Event[*corev1.ConfigMap]{Type: source.Update, Old: cm(1), Object: cm(2)}) {
		t.Error("two predicates: one refused, the event passed")
	}
}

// A controller-runtime map function, and EnqueueRequestForObject's key.
func TestMapFuncAndObjectKey(t *testing.T) {
	f := crport.MapFunc[*corev1.Secret](func(_ context.Context, o crclient.Object) []crreconcile.Request {
		return []crreconcile.Request{{NamespacedName: crclient.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetLabels()["owner"]}}}
	})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{"owner": "web"}}}
	if got := f(s); len(got) != 1 || got[0] != (reconcile.Request{Namespace: "ns", Name: "web"}) {
		t.Errorf("MapFunc = %v, want ns/web", got)
	}
	if got := crport.ObjectKey(s); len(got) != 1 || got[0] != (reconcile.Request{Namespace: "ns", Name: "s"}) {
		t.Errorf("ObjectKey = %v, want ns/s", got)
	}
}

// The legacy recorder records each Event once, its message as given (a
// "%" in it is not a verb).
func TestLegacyRecorder(t *testing.T) {
	fake := events.NewFakeRecorder(3)
	r := crport.LegacyRecorder(fake)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	r.Event(pod, corev1.EventTypeNormal, "Created", "made 100% of it")
	r.Eventf(pod, corev1.EventTypeWarning, "Failed", "%d tries", 3)
	r.AnnotatedEventf(pod, map[string]string{"a": "b"}, corev1.EventTypeNormal, "Done", "ok")
	for _, want := range []string{"Normal Created made 100% of it", "Warning Failed 3 tries", "Normal Done ok"} {
		if got := <-fake.Events; !strings.HasPrefix(got, want) {
			t.Errorf("recorded %q, want %q", got, want)
		}
	}
}

type untypedDefaulter struct{}

func (untypedDefaulter) Default(_ context.Context, obj runtime.Object) error {
	obj.(*corev1.Pod).Labels = map[string]string{"defaulted": "yes"}
	return nil
}

type untypedValidator struct{ calls []string }

func (v *untypedValidator) ValidateCreate(_ context.Context, obj runtime.Object) (webhook.Warnings, error) {
	v.calls = append(v.calls, "create "+obj.(*corev1.Pod).Name)
	return nil, nil
}

func (v *untypedValidator) ValidateUpdate(_ context.Context, oldObj, newObj runtime.Object) (webhook.Warnings, error) {
	v.calls = append(v.calls, "update "+oldObj.(*corev1.Pod).Name+" "+newObj.(*corev1.Pod).Name)
	return webhook.Warnings{"w"}, nil
}

func (v *untypedValidator) ValidateDelete(_ context.Context, obj runtime.Object) (webhook.Warnings, error) {
	v.calls = append(v.calls, "delete "+obj.(*corev1.Pod).Name)
	return nil, errors.New("no")
}

// Hooks of controller-runtime's untyped interfaces, as typed ones.
func TestTypedHooks(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	if err := crport.TypedDefaulter[*corev1.Pod](untypedDefaulter{}).Default(t.Context(), pod); err != nil || pod.Labels["defaulted"] != "yes" {
		t.Errorf("Default: %v, labels %v", err, pod.Labels)
	}
	v := &untypedValidator{}
	typed := crport.TypedValidator[*corev1.Pod](v)
	_, _ = typed.ValidateCreate(t.Context(), pod)
	w, _ := typed.ValidateUpdate(t.Context(), pod, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	_, err := typed.ValidateDelete(t.Context(), pod)
	if got := strings.Join(v.calls, ", "); got != "create a, update a b, delete a" || len(w) != 1 || err == nil {
		t.Errorf("calls %q, warnings %v, delete error %v", got, w, err)
	}
}
