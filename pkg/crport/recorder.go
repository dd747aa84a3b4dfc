package crport

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// MustEventRecorder is mgr.EventRecorder(name) where controller-runtime's
// mgr.GetEventRecorder(name) was one expression, such as a reconciler
// constructor's argument in a test suite. It panics if the manager refuses
// the name (one the API server would refuse), as a setup stops on any
// other error.
func MustEventRecorder(mgr *manager.Manager, name string) events.EventRecorder {
	r, err := mgr.EventRecorder(name)
	if err != nil {
		panic(fmt.Sprintf("crport: %v", err))
	}
	return r
}

// LegacyRecorder gives r, an Event recorder of the events.k8s.io API (the
// manager's EventRecorder), the interface of client-go's older
// record.EventRecorder, which controller-runtime's GetEventRecorderFor
// returns and reconcilers written for it hold: Event and Eventf record an
// Event whose action is its reason. The events.k8s.io API has no
// annotations: AnnotatedEventf records the Event without them.
func LegacyRecorder(r events.EventRecorder) record.EventRecorder {
	return legacy{r}
}

type legacy struct{ r events.EventRecorder }

func (l legacy) Event(obj runtime.Object, eventtype, reason, message string) {
	l.r.Eventf(obj, nil, eventtype, reason, reason, "%s", message)
}

func (l legacy) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	l.r.Eventf(obj, nil, eventtype, reason, reason, "%s", fmt.Sprintf(messageFmt, args...))
}

func (l legacy) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	l.Eventf(obj, eventtype, reason, messageFmt, args...)
}
