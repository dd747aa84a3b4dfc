package manager_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// A reconciler records events.k8s.io/v1 Events about its objects through
// the manager's recorder.
func TestEventRecorder(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	rec, err := m.EventRecorder("event-test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = manager.NewController(m, "event-test", reconcile.Func[reconcile.Request](func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm := &corev1.ConfigMap{}
		if err := m.UncachedClient().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, cm); err != nil {
			return reconcile.Done(), err
		}
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Seen", "Reconcile", "saw %s", req.Name)
		return reconcile.Done(), nil
	}), manager.For[*corev1.ConfigMap](nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	if err := m.UncachedClient().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event", func() bool {
		var evs eventsv1.EventList
		if err := m.UncachedClient().List(t.Context(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "Seen" && e.Regarding.Name == "a" && e.Note == "saw a" && e.ReportingController == "event-test" {
				return true
			}
		}
		return false
	})
}

// pprof is served beside /metrics only when asked for.
func TestPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		m := newManager(t, env.Namespace(t), manager.Options{Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0", Pprof: on}})
		start(t, m)
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if code, _ := get(t, "http://"+m.MetricsAddr()+"/debug/pprof/"); code != want {
			t.Errorf("pprof %v: /debug/pprof/ = %d, want %d", on, code, want)
		}
	}
}

// configMap creates a ConfigMap in ns for Events to be about.
func configMap(t *testing.T, m *manager.Manager, ns string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "regarding", Namespace: ns}}
	if err := m.UncachedClient().Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// storedEvent waits for an Event of reason in ns and returns it.
func storedEvent(t *testing.T, m *manager.Manager, ns, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	eventually(t, "the Event "+reason+" to be stored", func() bool {
		var evs eventsv1.EventList
		if err := m.UncachedClient().List(t.Context(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// An Event without an action, which the API server would refuse, is stored
// with its reason as its action.
func TestEventWithoutAction(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	rec, err := m.EventRecorder("event-test")
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	rec.Eventf(configMap(t, m, ns), nil, corev1.EventTypeNormal, "Seen", "", "no action")
	if e := storedEvent(t, m, ns, "Seen"); e.Action != "Seen" {
		t.Errorf("action = %q, want the reason, %q", e.Action, "Seen")
	}
}

// Each Event is logged at verbosity 1 through the manager's logger, as
// controller-runtime's recorders log it; not at verbosity 0.
func TestEventLoggedAtVerbosityOne(t *testing.T) {
	ns := env.Namespace(t)
	var logs logBuffer
	m := newManager(t, ns, manager.Options{Logger: logs.logger()})
	rec, err := m.EventRecorder("event-test")
	if err != nil {
		t.Fatal(err)
	}
	start(t, m)
	cm := configMap(t, m, ns)
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Seen", "Look", "seen %d times", 3)
	for _, want := range []string{`"msg"="seen 3 times"`, `"reporter"="event-test"`, `"reason"="Seen"`, `"action"="Look"`, `"type"="Normal"`, `"name"="` + cm.GetName() + `"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the Event's log lacks %s:\n%s", want, logs.String())
		}
	}
	quiet := newManager(t, ns, manager.Options{Logger: funcr.New(func(_, args string) {
		t.Errorf("logged at verbosity 0: %s", args)
	}, funcr.Options{})})
	rec, err = quiet.EventRecorder("event-test")
	if err != nil {
		t.Fatal(err)
	}
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Seen", "Look", "not logged")
}

// An Event the API server refuses (here: no reason) is logged through the
// manager's logger and counted, by reporter and the API server's reason.
func TestRefusedEventLoggedAndCounted(t *testing.T) {
	ns := env.Namespace(t)
	var logs logBuffer
	m := newManager(t, ns, manager.Options{Logger: logs.logger()})
	rec, err := m.EventRecorder("event-test")
	if err != nil {
		t.Fatal(err)
	}
	if n := counter(t, m.Registry(), imetrics.EventsRefused, "reporter", "event-test", "reason", "Invalid"); n != 0 {
		t.Errorf("%s = %v before any Event, want 0", imetrics.EventsRefused, n)
	}
	start(t, m)
	rec.Eventf(configMap(t, m, ns), nil, corev1.EventTypeNormal, "", "Reconcile", "refused")
	eventually(t, "the refusal to be logged", func() bool { return strings.Contains(logs.String(), "Event refused by the API server") })
	if !strings.Contains(logs.String(), `"reporter"="event-test"`) {
		t.Errorf("the refusal's log lacks the reporter:\n%s", logs.String())
	}
	if n := counter(t, m.Registry(), imetrics.EventsRefused, "reporter", "event-test", "reason", "Invalid"); n != 1 {
		t.Errorf("%s = %v, want 1", imetrics.EventsRefused, n)
	}
}

// A recorder whose name the API server would refuse on every Event is not
// made: the error says what is allowed.
func TestEventRecorderRejectsBadNames(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{})
	for _, tt := range []struct {
		name    string
		mention string
	}{
		{"Foo controller", "qualified name"},
		{"", "qualified name"},
		{"-mirror", "qualified name"},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "/mirror", "at most 128"},
	} {
		if _, err := m.EventRecorder(tt.name); err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("EventRecorder(%q) = %v, want an error mentioning %q", tt.name, err, tt.mention)
		}
	}
	for _, name := range []string{"mirror", "example.com/mirror-controller"} {
		if _, err := m.EventRecorder(name); err != nil {
			t.Errorf("EventRecorder(%q) = %v", name, err)
		}
	}
}
