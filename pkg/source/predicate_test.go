package source_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/opkit-dev/opkit/pkg/source"
)

// cmWith returns a ConfigMap with the given resourceVersion, generation,
// labels and annotations.
func cmWith(rv int, gen int64, lbls, annotations map[string]string) *corev1.ConfigMap {
	cm := configMap("ns", "cm", rv)
	cm.Generation, cm.Labels, cm.Annotations = gen, lbls, annotations
	return cm
}

func TestPredicates(t *testing.T) {
	a, b := map[string]string{"app": "a"}, map[string]string{"app": "b"}
	base := cmWith(1, 1, a, a)
	events := map[string]cmEvent{
		"create":      {Type: source.Create, Object: base},
		"delete":      {Type: source.Delete, Object: base},
		"resync":      {Type: source.Update, Old: base, Object: base},
		"generation":  {Type: source.Update, Old: base, Object: cmWith(2, 2, a, a)},
		"labels":      {Type: source.Update, Old: base, Object: cmWith(2, 1, b, a)},
		"annotations": {Type: source.Update, Old: base, Object: cmWith(2, 1, a, b)},
		"status":      {Type: source.Update, Old: base, Object: cmWith(2, 1, a, a)},
		"create b":    {Type: source.Create, Object: cmWith(1, 1, b, nil)},
	}
	appA := labels.SelectorFromSet(a)
	tests := []struct {
		name string
		p    source.Predicate[*corev1.ConfigMap]
		keep []string // the events kept, of all events
	}{
		{"GenerationChanged", source.GenerationChanged[*corev1.ConfigMap],
			[]string{"create", "create b", "delete", "generation"}},
		{"ResourceVersionChanged", source.ResourceVersionChanged[*corev1.ConfigMap],
			[]string{"annotations", "create", "create b", "delete", "generation", "labels", "status"}},
		{"LabelsChanged", source.LabelsChanged[*corev1.ConfigMap],
			[]string{"create", "create b", "delete", "labels"}},
		{"AnnotationsChanged", source.AnnotationsChanged[*corev1.ConfigMap],
			[]string{"annotations", "create", "create b", "delete"}},
		{"LabelSelector keeps objects leaving it", source.LabelSelector[*corev1.ConfigMap](appA),
			[]string{"annotations", "create", "delete", "generation", "labels", "resync", "status"}},
		{"LabelSelector nil", source.LabelSelector[*corev1.ConfigMap](nil), nil},
		{"And", source.And(source.ResourceVersionChanged[*corev1.ConfigMap], source.LabelSelector[*corev1.ConfigMap](appA)),
			[]string{"annotations", "create", "delete", "generation", "labels", "status"}},
		{"And of none", source.And[*corev1.ConfigMap](),
			[]string{"annotations", "create", "create b", "delete", "generation", "labels", "resync", "status"}},
		{"Or", source.Or(source.GenerationChanged[*corev1.ConfigMap], source.LabelsChanged[*corev1.ConfigMap]),
			[]string{"create", "create b", "delete", "generation", "labels"}},
		{"Or of none", source.Or[*corev1.ConfigMap](), nil},
		{"Not", source.Not(source.LabelsChanged[*corev1.ConfigMap]),
			[]string{"annotations", "generation", "resync", "status"}},
		{"a function", func(e cmEvent) bool { return e.Type == source.Delete },
			[]string{"delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kept []string
			for _, name := range sortedKeys(events) {
				if tt.p(events[name]) {
					kept = append(kept, name)
				}
			}
			if diff := cmp.Diff(tt.keep, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventPriority(t *testing.T) {
	one, two := configMap("ns", "a", 1), configMap("ns", "a", 2)
	tests := []struct {
		name   string
		event  cmEvent
		want   int
		resync bool
	}{
		{"initial list", cmEvent{Type: source.Create, Object: one, InInitialList: true}, -100, false},
		{"create", cmEvent{Type: source.Create, Object: one}, 0, false},
		{"update", cmEvent{Type: source.Update, Old: one, Object: two}, 0, false},
		{"resync", cmEvent{Type: source.Update, Old: two, Object: two}, -100, true},
		{"delete", cmEvent{Type: source.Delete, Object: two}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.event.Priority(); got != tt.want {
				t.Errorf("Priority() = %d, want %d", got, tt.want)
			}
			if got := tt.event.Resync(); got != tt.resync {
				t.Errorf("Resync() = %t, want %t", got, tt.resync)
			}
		})
	}
}
