package mirror_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// A Mirror copies its source into the matching namespaces, and its copies
// follow the source, come back when deleted and are put back when edited.
func TestCopiesFollowTheSource(t *testing.T) {
	w := operator(t)
	a1, a2 := w.namespace(map[string]string{"team": "a"}), w.namespace(map[string]string{"team": "a"})
	b := w.namespace(map[string]string{"team": "b"})
	src := w.configMap(w.home, "ca-bundle", map[string]string{"ca.crt": "v1"})
	m := w.mirror("ca-bundle", v1alpha1.KindConfigMap, "ca-bundle", w.selecting(map[string]string{"team": "a"}))

	for _, ns := range []string{a1, a2} {
		w.eventually("a copy in "+ns, w.hasData(ns, "ca-bundle", map[string]string{"ca.crt": "v1"}))
	}
	w.eventually("Ready", w.ready(m, v1alpha1.ReasonSynced, 2))
	if _, err := w.copyData(b, "ca-bundle"); err == nil {
		t.Errorf("a namespace the selector does not match got a copy")
	}
	cp := &corev1.ConfigMap{}
	if err := w.cl.Get(t.Context(), client.ObjectKey{Namespace: a1, Name: "ca-bundle"}, cp); err != nil {
		t.Fatal(err)
	}
	if cp.Labels[mirror.LabelMirrorNamespace] != w.home || cp.Labels[mirror.LabelMirrorName] != "ca-bundle" {
		t.Errorf("a copy's labels %v do not name its Mirror", cp.Labels)
	}

	src.Data["ca.crt"] = "v2"
	if err := w.cl.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{a1, a2} {
		w.eventually("the copy in "+ns+" to follow the source", w.hasData(ns, "ca-bundle", map[string]string{"ca.crt": "v2"}))
	}

	if err := w.cl.Delete(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	w.eventually("a deleted copy to come back", w.hasData(a1, "ca-bundle", map[string]string{"ca.crt": "v2"}))

	edited := &corev1.ConfigMap{}
	if err := w.cl.Get(t.Context(), client.ObjectKey{Namespace: a2, Name: "ca-bundle"}, edited); err != nil {
		t.Fatal(err)
	}
	edited.Data = map[string]string{"ca.crt": "tampered", "extra": "key"}
	if err := w.cl.Update(t.Context(), edited); err != nil {
		t.Fatal(err)
	}
	w.eventually("an edited copy to be put back", w.hasData(a2, "ca-bundle", map[string]string{"ca.crt": "v2"}))
}

// Copies follow the namespaces the selector matches.
func TestNamespacesComeAndGo(t *testing.T) {
	w := operator(t)
	a := w.namespace(map[string]string{"team": "a"})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))
	w.eventually("a copy", w.hasData(a, "cfg", map[string]string{"k": "v"}))

	w.relabel(a, map[string]string{"team": "b"})
	w.eventually("the copy to go when its namespace stops matching", w.gone(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "cfg"}}))
	w.eventually("Ready with no namespaces", w.ready(m, v1alpha1.ReasonSynced, 0))

	late := w.namespace(nil)
	w.relabel(late, map[string]string{"team": "a"})
	w.eventually("a copy in a namespace that starts matching", w.hasData(late, "cfg", map[string]string{"k": "v"}))
	w.eventually("Ready with one namespace", w.ready(m, v1alpha1.ReasonSynced, 1))
}

// Copies go with their source and come back with it; a deleted Mirror takes
// its copies with it.
func TestSourceAndMirrorDeletion(t *testing.T) {
	w := operator(t)
	a := w.namespace(map[string]string{"team": "a"})
	src := w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))
	copyObj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "cfg"}}
	w.eventually("a copy", w.hasData(a, "cfg", map[string]string{"k": "v"}))

	if err := w.cl.Delete(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	w.eventually("the copy to go with its source", w.gone(copyObj))
	w.eventually("SourceNotFound", w.ready(m, v1alpha1.ReasonSourceNotFound, 0))
	w.eventually("a SourceNotFound Event", w.event(m, v1alpha1.ReasonSourceNotFound))

	w.configMap(w.home, "cfg", map[string]string{"k": "again"})
	w.eventually("the copy to come back with its source", w.hasData(a, "cfg", map[string]string{"k": "again"}))

	if err := w.cl.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	w.eventually("the copy to go with its Mirror", w.gone(copyObj))
	w.eventually("the Mirror to go once its copies have", w.gone(&v1alpha1.Mirror{ObjectMeta: m.ObjectMeta}))
}

// An object of the source's name that the Mirror does not own is left
// alone and reported; the other namespaces still get their copies.
func TestConflictWithAnUnownedObject(t *testing.T) {
	w := operator(t)
	mine, theirs := w.namespace(map[string]string{"team": "a"}), w.namespace(map[string]string{"team": "a"})
	w.configMap(theirs, "cfg", map[string]string{"owner": "someone else"})
	w.configMap(w.home, "cfg", map[string]string{"k": "v"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))

	w.eventually("a copy where there is no conflict", w.hasData(mine, "cfg", map[string]string{"k": "v"}))
	w.eventually("Conflict", w.ready(m, v1alpha1.ReasonConflict, 1))
	w.eventually("a Conflict Event", w.event(m, v1alpha1.ReasonConflict))
	got := &v1alpha1.Mirror{}
	if err := w.cl.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Conflicts != 1 {
		t.Errorf("conflicts = %d, want 1", got.Status.Conflicts)
	}
	if err := w.hasData(theirs, "cfg", map[string]string{"owner": "someone else"})(); err != nil {
		t.Errorf("the unowned object was touched: %v", err)
	}

	// Deleting the Mirror leaves the unowned object alone too.
	if err := w.cl.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	w.eventually("the Mirror to go", w.gone(&v1alpha1.Mirror{ObjectMeta: m.ObjectMeta}))
	if err := w.hasData(theirs, "cfg", map[string]string{"owner": "someone else"})(); err != nil {
		t.Errorf("deleting the Mirror touched the unowned object: %v", err)
	}
}

// A spec the API server accepts but the operator cannot use is reported in
// the condition and an Event, and not retried in a loop.
func TestInvalidSpecDoesNotHotLoop(t *testing.T) {
	w := operator(t)
	w.configMap(w.home, "cfg", nil)
	sel := w.selecting(nil)
	sel.MatchLabels["team"] = "not a valid label value!"
	m := w.mirror("bad", v1alpha1.KindConfigMap, "cfg", sel)
	w.eventually("InvalidSpec", w.ready(m, v1alpha1.ReasonInvalidSpec, 0))
	w.eventually("an InvalidSpec Event", w.event(m, v1alpha1.ReasonInvalidSpec))
	before := w.reconciles(imetrics.ResultError)
	time.Sleep(2 * time.Second)
	if after := w.reconciles(imetrics.ResultError); after != before {
		t.Errorf("an invalid spec was retried %v times in 2s", after-before)
	}
}

// The API server rejects what the CRD's schema forbids.
func TestCRDValidation(t *testing.T) {
	w := operator(t)
	for _, tt := range []struct {
		name string
		spec v1alpha1.MirrorSpec
		want string
	}{
		{"unknown kind", v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: "Pod", Name: "x"}}, "Unsupported value"},
		{"empty name", v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: "ConfigMap"}}, "spec.source.name"},
		{"bad operator", v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: "ConfigMap", Name: "x"},
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}},
			"operators must be In, NotIn, Exists or DoesNotExist"},
	} {
		err := w.cl.Create(t.Context(), &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Name: "invalid", Namespace: w.home}, Spec: tt.spec})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Create = %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}

// Secrets are mirrored too, with their type.
func TestSecretSource(t *testing.T) {
	w := operator(t)
	a := w.namespace(map[string]string{"team": "a"})
	w.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: w.home}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte("s3cr3t")}})
	m := w.mirror("token", v1alpha1.KindSecret, "token", w.selecting(map[string]string{"team": "a"}))
	w.eventually("a Secret copy", func() error {
		s := &corev1.Secret{}
		if err := w.cl.Get(t.Context(), client.ObjectKey{Namespace: a, Name: "token"}, s); err != nil {
			return err
		}
		if string(s.Data["token"]) != "s3cr3t" || s.Type != corev1.SecretTypeOpaque {
			return fmt.Errorf("copy holds %v of type %s", s.Data, s.Type)
		}
		return nil
	})
	w.eventually("Ready", w.ready(m, v1alpha1.ReasonSynced, 1))
}
