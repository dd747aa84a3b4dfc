package mirror

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
	"github.com/opkit-dev/opkit/pkg/source"
)

// Setup registers what the Mirror controller reads with the manager's
// cache, and adds the controller to the manager, copying where and what
// policy allows (the zero Policy is the strictest). The manager's scheme
// must hold v1alpha1.
func Setup(m *manager.Manager, policy Policy, opts controller.Options[reconcile.Request]) (*controller.Controller[reconcile.Request], error) {
	// The controller shards Mirrors by UID (manager.ShardBy's default).
	s, err := newCacheStore(m.Cache(), m.UncachedClient(), m.ShardedTypeOptions(sharding.ByUID))
	if err != nil {
		return nil, fmt.Errorf("set up the mirror controller: %w", err)
	}
	rec, err := m.EventRecorder("mirror")
	if err != nil {
		return nil, fmt.Errorf("set up the mirror controller: %w", err)
	}
	// The writer names the controller as the field owner of its writes,
	// skips patches that change nothing and counts writes in
	// opkit_client_writes_total; the manager's client underneath records
	// them for read-your-writes.
	r := &Reconciler{Store: s, Client: m.Writer("mirror"), Recorder: rec, Policy: policy}
	// Sources are read, and copies written, as the Mirror's ServiceAccount:
	// the API server decides each of those requests.
	if !policy.ActAsOperator {
		r.ActAs = func(mr *v1alpha1.Mirror) client.Client {
			return m.WriterAs("mirror", manager.ServiceAccount(mr.Namespace, serviceAccount(mr)))
		}
	}
	cmOthers, secretOthers := s.configMaps.others, s.secrets.others
	var pinned []manager.ControllerOption
	if policy.IdentityPolicy != "" {
		if r.pin, err = newIdentityPin(m.Cache(), policy.IdentityPolicy); err != nil {
			return nil, fmt.Errorf("set up the mirror controller: %w", err)
		}
		pinned = append(pinned,
			manager.Watches(&r.pin.bindings, func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding) []reconcile.Request {
				return s.everyMirror()
			}),
			manager.Watches(&r.pin.policies, func(*admissionregistrationv1.ValidatingAdmissionPolicy) []reconcile.Request { return s.everyMirror() }))
	}
	return manager.NewController(m, "mirror", r, append(pinned,
		// A new generation: a change of the spec, or the start of a
		// deletion; not the controller's own status writes.
		manager.For(&s.mirrors, source.GenerationChanged),
		// Finalizer holds a deleted Mirror until Cleanup has deleted its
		// copies; the reconciler never sees a Mirror being deleted.
		manager.Finalizer(Finalizer, r.Cleanup),
		// A copy's change enqueues its Mirror; a source's, from the
		// metadata of every other object, the Mirrors that copy it; a
		// namespace's, the Mirrors it accepts that select it.
		manager.Watches(&s.configMaps.copies, s.mirrorsOf(v1alpha1.KindConfigMap)),
		manager.Watches(&cmOthers, s.mirrorsOf(v1alpha1.KindConfigMap)),
		manager.Watches(&s.secrets.copies, s.mirrorsOf(v1alpha1.KindSecret)),
		manager.Watches(&secretOthers, s.mirrorsOf(v1alpha1.KindSecret)),
		manager.Watches(&s.namespaces, s.mirrorsSelecting),
		manager.WithOptions(opts),
	)...)
}

// mirrorsSelecting maps a namespace to the Mirrors that may copy into it:
// those it accepts (AcceptLabel) whose selector matches it. A namespace
// that stops matching or withdraws its acceptance is mapped, by its old
// labels, to the Mirrors that must delete their copies.
func (s *cacheStore) mirrorsSelecting(ns *corev1.Namespace) []reconcile.Request {
	var out []reconcile.Request
	for k, v := range ns.Labels {
		home, ok := strings.CutPrefix(k, AcceptLabelPrefix)
		if !ok {
			continue
		}
		ms, _ := s.mirrors.List(home, nil)
		for _, m := range ms {
			if v != acceptAll && v != m.Name {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(&m.Spec.NamespaceSelector)
			if err == nil && sel.Matches(labels.Set(ns.Labels)) {
				out = append(out, reconcile.Request{Namespace: m.Namespace, Name: m.Name})
			}
		}
	}
	return out
}
