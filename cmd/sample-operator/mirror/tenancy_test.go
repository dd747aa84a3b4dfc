package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// The tenancy tests play issue 30's attacks: a tenant who may write
// Mirrors, ConfigMaps and Secrets in their own namespace only must not get
// the operator to write anywhere else that did not ask for it, nor learn
// from a Mirror's status what they cannot list.

// settled returns a check that m's status is about its generation and its
// Ready condition has reason.
func (w *world) settled(m *v1alpha1.Mirror, reason string) func() error {
	return func() error {
		got := &v1alpha1.Mirror{}
		if err := w.cl.Get(w.t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != reason || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v, want Ready reason %s", got.Status, reason)
		}
		return nil
	}
}

// statusJSON returns m's status as the API server serves it.
func (w *world) statusJSON(m *v1alpha1.Mirror) string {
	w.t.Helper()
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(w.t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		w.t.Fatal(err)
	}
	data, err := json.Marshal(got.Status)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(data)
}

// copiesOf returns the namespaces, sorted, holding an object of kind
// (a list) labelled as a copy of m.
func (w *world) copiesOf(m *v1alpha1.Mirror, list client.ObjectList) []string {
	w.t.Helper()
	if err := w.cl.List(w.t.Context(), list, client.MatchingLabels{mirror.LabelMirrorNamespace: m.Namespace, mirror.LabelMirrorName: m.Name}); err != nil {
		w.t.Fatal(err)
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, o := range items {
		out = append(out, o.(client.Object).GetNamespace())
	}
	slices.Sort(out)
	return out
}

// optInKubeSystem labels kube-system to accept copies from the test's
// Mirrors, creating it if the control plane lacks it, and removes the
// label when the test ends.
func (w *world) optInKubeSystem() {
	w.t.Helper()
	err := w.cl.Create(w.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		w.t.Fatal(err)
	}
	w.relabel(metav1.NamespaceSystem, map[string]string{mirror.AcceptLabel(w.home): "true"})
	w.t.Cleanup(func() {
		patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, mirror.AcceptLabel(w.home))))
		if err := w.cl.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}, patch); err != nil {
			w.t.Errorf("remove the test's label from kube-system: %v", err)
		}
	})
}

// Attack 1: a Mirror with an empty selector copies only into the
// namespaces that accept copies from its namespace, never into kube-system
// even if kube-system opted in, and a Secret the cluster acts on (a
// bootstrap token) is copied nowhere.
func TestEmptySelectorCopiesOnlyWhereAccepted(t *testing.T) {
	w := operator(t)
	w.optInKubeSystem()
	accepting, foreign := w.namespace(nil), w.foreignNamespace(nil)
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", metav1.LabelSelector{})
	w.eventually("Ready", w.settled(m, v1alpha1.ReasonSynced))
	if got := w.copiesOf(m, &corev1.ConfigMapList{}); !slices.Equal(got, []string{accepting}) {
		t.Errorf("copies in %v, want in %s only (not in %s, which did not opt in, nor in kube-system)", got, accepting, foreign)
	}

	w.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: w.home},
		Type: corev1.SecretTypeBootstrapToken, Data: map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef")}})
	tok := w.mirror("token", v1alpha1.KindSecret, "bootstrap-token-abcdef", metav1.LabelSelector{})
	w.eventually("SourceRefused", w.settled(tok, "SourceRefused"))
	if got := w.copiesOf(tok, &corev1.SecretList{}); len(got) != 0 {
		t.Errorf("a bootstrap token was copied into %v, want nowhere", got)
	}
	w.eventually("a SourceRefused Event", w.event(tok, "SourceRefused"))
}

// Attack 2 and the status part of attack 4: a victim's object of the
// source's name, in a namespace that accepts copies, is left untouched and
// its namespace is told by an Event naming the Mirror; the Mirror's status
// counts the conflict but names no namespace but its own.
func TestVictimIsToldAndStatusNamesNoNamespace(t *testing.T) {
	w := operator(t)
	mine, victim := w.namespace(nil), w.namespace(nil)
	theirs := w.configMap(victim, "app-config", map[string]string{"owner": "victim"})
	w.configMap(w.home, "app-config", map[string]string{"k": "v"})
	m := w.mirror("planter", v1alpha1.KindConfigMap, "app-config", w.selecting(nil))

	w.eventually("a copy where there is no conflict", w.hasData(mine, "app-config", map[string]string{"k": "v"}))
	w.eventually("Conflict", w.ready(m, v1alpha1.ReasonConflict, 1))
	got := &corev1.ConfigMap{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(theirs), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != theirs.ResourceVersion || fmt.Sprint(got.Data) != fmt.Sprint(theirs.Data) || mirror.CopyOf(got) != "" {
		t.Errorf("the victim's object was touched: %+v, was %+v", got, theirs)
	}
	status := w.statusJSON(m)
	for _, ns := range []string{mine, victim} {
		if strings.Contains(status, ns) {
			t.Errorf("the Mirror's status names namespace %s: %s", ns, status)
		}
	}
	var counts struct {
		Conflicts int `json:"conflicts"`
	}
	if err := json.Unmarshal([]byte(status), &counts); err != nil || counts.Conflicts != 1 {
		t.Errorf("status.conflicts = %d (%v), want 1: %s", counts.Conflicts, err, status)
	}
	w.eventually("an Event to the victim", func() error {
		evs := &eventsv1.EventList{}
		if err := w.cl.List(t.Context(), evs, client.InNamespace(victim)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "MirrorConflict" && e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == "app-config" &&
				e.Regarding.UID == theirs.UID && strings.Contains(e.Note, w.home+"/planter") {
				return nil
			}
		}
		return fmt.Errorf("no MirrorConflict Event about %s/app-config naming the Mirror in %v", victim, evs.Items)
	})
}

// A namespace that withdraws its opt-in loses its copy: the opt-in is
// checked at every reconcile, not only when the Mirror is admitted.
func TestOptOutRemovesTheCopy(t *testing.T) {
	w := operator(t)
	a, b := w.namespace(nil), w.namespace(nil)
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(nil))
	w.eventually("Ready with two namespaces", w.ready(m, v1alpha1.ReasonSynced, 2))

	w.relabel(a, map[string]string{mirror.AcceptLabel(w.home): ""})
	w.eventually("the copy to go when its namespace opts out", w.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "cfg"}}))
	w.eventually("Ready with one namespace", w.ready(m, v1alpha1.ReasonSynced, 1))

	// Accepting another Mirror of the namespace is no opt-in to this one.
	w.relabel(b, map[string]string{mirror.AcceptLabel(w.home): "another"})
	w.eventually("the copy to go when its namespace accepts another Mirror", w.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "cfg"}}))
	w.relabel(a, map[string]string{mirror.AcceptLabel(w.home): "cfg"})
	w.eventually("a copy when a namespace accepts this Mirror by name", w.hasData(a, "cfg", map[string]string{"k": "v"}))
}

// A Mirror selecting more namespaces than the operator's --max-targets
// copies into the first of them by name, and says so in its status.
func TestFanOutIsCapped(t *testing.T) {
	w := operatorWith(t, env.Config(), mirror.Policy{MaxTargets: 2})
	nss := []string{w.namespace(nil), w.namespace(nil), w.namespace(nil)}
	slices.Sort(nss)
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(nil))
	w.eventually("TooManyTargets", w.settled(m, "TooManyTargets"))
	if got := w.copiesOf(m, &corev1.ConfigMapList{}); !slices.Equal(got, nss[:2]) {
		t.Errorf("copies in %v, want in the first two by name: %v", got, nss[:2])
	}
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "--max-targets") || got.Status.SyncedNamespaces != 2 {
		t.Errorf("status %+v, want 2 synced and a message naming --max-targets", got.Status)
	}
}
