package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// maxReportingInstance is the API server's limit on an Event's
// reportingInstance, which client-go makes of the recorder's name, "-" and
// the host name.
const maxReportingInstance = 128

// EventRecorder returns a recorder of events.k8s.io/v1 Events reported by
// the controller named name. Events are sent while the manager runs.
//
// name becomes every Event's reportingController, which the API server
// requires to be a qualified name, such as "mirror" or
// "example.com/mirror-controller"; any other name fails here, since the API
// server would refuse every Event of the recorder. An Event recorded with
// an empty action, which the API server also refuses, gets its reason as
// its action. An Event refused all the same is logged and counted (see
// opkit_events_refused_total). Each Event is also logged through the
// manager's logger, named "events", at verbosity 1, as controller-runtime's
// recorders log it.
func (m *Manager) EventRecorder(name string) (events.EventRecorder, error) {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return nil, fmt.Errorf("manager: EventRecorder(%q): the name must be a qualified name, such as \"mirror\" or \"example.com/mirror\", as the API server refuses Events reported by any other: %s",
			name, strings.Join(errs, "; "))
	}
	host, _ := os.Hostname()
	if n := len(name) + 1 + len(host); n > maxReportingInstance {
		return nil, fmt.Errorf("manager: EventRecorder(%q): the name, \"-\" and the host name %q make a reportingInstance of %d characters, and the API server accepts at most %d: use a shorter name",
			name, host, n, maxReportingInstance)
	}
	for _, reason := range []string{string(metav1.StatusReasonInvalid), string(metav1.StatusReasonForbidden)} {
		m.eventsRefused.WithLabelValues(name, reason)
	}
	return defaultAction{m.broadcast.NewRecorder(m.scheme, name), m.log.WithName("events").WithValues("reporter", name).V(1)}, nil
}

// defaultAction gives an Event without an action its reason as action, and
// logs each Event at verbosity 1, as controller-runtime's recorders do.
type defaultAction struct {
	events.EventRecorder
	log logr.Logger // at V(1)
}

var _ events.EventRecorder = defaultAction{}

func (d defaultAction) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if action == "" {
		action = reason
	}
	if d.log.Enabled() {
		kv := []any{"type", eventtype, "reason", reason, "action", action}
		if o, err := meta.Accessor(regarding); err == nil {
			kv = append(kv, "object", klog.KObj(o))
		}
		if regarding != nil {
			if kind := regarding.GetObjectKind().GroupVersionKind().Kind; kind != "" {
				kv = append(kv, "kind", kind)
			}
		}
		d.log.Info(fmt.Sprintf(note, args...), kv...)
	}
	d.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// refusals is an EventSink that logs and counts the writes the API server
// refuses, which client-go's broadcaster drops.
type refusals struct {
	events.EventSink
	log     logr.Logger
	refused *prometheus.CounterVec
}

var _ events.EventSink = (*refusals)(nil)

func newRefusals(sink events.EventSink, log logr.Logger, reg prometheus.Registerer) (*refusals, error) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: imetrics.EventsRefused,
		Help: "Events the API server refused, and that were dropped, by reporter and the API server's reason.",
	}, []string{"reporter", "reason"})
	if err := reg.Register(refused); err != nil {
		return nil, fmt.Errorf("register %s: %w", imetrics.EventsRefused, err)
	}
	return &refusals{EventSink: sink, log: log, refused: refused}, nil
}

func (s *refusals) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSink.Create(ctx, e)
	s.observe(e, err, false)
	return out, err
}

func (s *refusals) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSink.Update(ctx, e)
	s.observe(e, err, false)
	return out, err
}

func (s *refusals) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := s.EventSink.Patch(ctx, e, data)
	s.observe(e, err, true)
	return out, err
}

// observe logs and counts err if it is the API server refusing e. The
// broadcaster follows a patch of a vanished series with a create, and
// drops or retries a create of an Event that exists: neither is a refusal.
func (s *refusals) observe(e *eventsv1.Event, err error, patch bool) {
	var status apierrors.APIStatus
	switch {
	case err == nil, patch && apierrors.IsNotFound(err), apierrors.IsAlreadyExists(err):
	case errors.As(err, &status):
		reason := string(apierrors.ReasonForError(err))
		if reason == "" {
			reason = "Unknown"
		}
		s.refused.WithLabelValues(e.ReportingController, reason).Inc()
		s.log.Error(err, "Event refused by the API server; dropped",
			"reporter", e.ReportingController, "namespace", e.Regarding.Namespace, "name", e.Regarding.Name,
			"kind", e.Regarding.Kind, "reason", e.Reason, "action", e.Action)
	default:
		s.log.V(1).Info("Cannot send an Event; the broadcaster retries", "reporter", e.ReportingController, "error", err.Error())
	}
}
