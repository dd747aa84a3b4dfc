package v1beta1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/randfill"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1beta1"
)

const rounds = 2000

// filler fills Mirrors of both versions with random values that the CRD's
// schema admits: a v1alpha1 source kind of ConfigMap, Secret or unset
// (where the defaulting webhook is not installed), a v1beta1 spec.from
// with exactly one of configMap and secret, and never the converter's own
// annotation.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(s *v1alpha1.SourceRef, c randfill.Continue) {
			s.Kind = []string{v1alpha1.KindConfigMap, v1alpha1.KindSecret, ""}[c.Intn(3)]
			s.Name = "n" + c.String(0)
		},
		func(f *v1beta1.From, c randfill.Continue) {
			name := &v1beta1.ObjectName{Name: "n" + c.String(0)}
			*f = v1beta1.From{}
			if c.Bool() {
				f.ConfigMap = name
			} else {
				f.Secret = name
			}
		},
		func(a *map[string]string, c randfill.Continue) {
			c.FillNoCustom(a)
			delete(*a, v1beta1.AnnotationSourceName)
		},
	)
}

// A v1alpha1 Mirror converted to v1beta1 and back is the Mirror it was.
func TestRoundTripFromHub(t *testing.T) {
	f := filler(1)
	for i := range rounds {
		want := &v1alpha1.Mirror{}
		f.Fill(want)
		want.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Mirror"))
		before := want.DeepCopy()

		spoke := &v1beta1.Mirror{}
		if err := spoke.ConvertFrom(want); err != nil {
			t.Fatalf("round %d: ConvertFrom: %v", i, err)
		}
		got := &v1alpha1.Mirror{}
		if err := spoke.ConvertTo(got); err != nil {
			t.Fatalf("round %d: ConvertTo: %v", i, err)
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("round %d: v1alpha1 -> v1beta1 -> v1alpha1 changed the Mirror (-want +got):\n%s", i, cmp.Diff(want, got))
		}
		if !apiequality.Semantic.DeepEqual(want, before) {
			t.Fatalf("round %d: ConvertFrom modified its source (-before +after):\n%s", i, cmp.Diff(before, want))
		}
	}
}

// A v1beta1 Mirror converted to v1alpha1 and back is the Mirror it was.
func TestRoundTripFromSpoke(t *testing.T) {
	f := filler(2)
	for i := range rounds {
		want := &v1beta1.Mirror{}
		f.Fill(want)
		want.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("Mirror"))
		before := want.DeepCopy()

		hub := &v1alpha1.Mirror{}
		if err := want.ConvertTo(hub); err != nil {
			t.Fatalf("round %d: ConvertTo: %v", i, err)
		}
		got := &v1beta1.Mirror{}
		if err := got.ConvertFrom(hub); err != nil {
			t.Fatalf("round %d: ConvertFrom: %v", i, err)
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("round %d: v1beta1 -> v1alpha1 -> v1beta1 changed the Mirror (-want +got):\n%s", i, cmp.Diff(want, got))
		}
		if !apiequality.Semantic.DeepEqual(want, before) {
			t.Fatalf("round %d: ConvertTo modified its source (-before +after):\n%s", i, cmp.Diff(before, want))
		}
	}
}

// The fields v1beta1 reshapes land where the package doc says.
func TestConvertFields(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want v1beta1.From
		ann  string
	}{
		{kind: v1alpha1.KindConfigMap, want: v1beta1.From{ConfigMap: &v1beta1.ObjectName{Name: "src"}}},
		{kind: v1alpha1.KindSecret, want: v1beta1.From{Secret: &v1beta1.ObjectName{Name: "src"}}},
		{kind: "", ann: "src"},
	} {
		t.Run("kind="+tc.kind, func(t *testing.T) {
			hub := &v1alpha1.Mirror{Spec: v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: tc.kind, Name: "src"}}}
			hub.Spec.NamespaceSelector.MatchLabels = map[string]string{"team": "a"}
			m := &v1beta1.Mirror{}
			if err := m.ConvertFrom(hub); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.Spec.From); diff != "" {
				t.Errorf("spec.from (-want +got):\n%s", diff)
			}
			if got := m.Annotations[v1beta1.AnnotationSourceName]; got != tc.ann {
				t.Errorf("annotation %s = %q, want %q", v1beta1.AnnotationSourceName, got, tc.ann)
			}
			if got := m.Spec.To.NamespaceSelector.MatchLabels["team"]; got != "a" {
				t.Errorf("spec.to.namespaceSelector lost matchLabels: %v", m.Spec.To.NamespaceSelector)
			}
			if gvk := m.GroupVersionKind(); gvk != v1beta1.GroupVersion.WithKind("Mirror") {
				t.Errorf("GVK = %v", gvk)
			}
		})
	}
}

// A kind the hub's schema refuses cannot be converted silently.
func TestConvertFromUnknownKind(t *testing.T) {
	hub := &v1alpha1.Mirror{Spec: v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: "Pod", Name: "p"}}}
	if err := (&v1beta1.Mirror{}).ConvertFrom(hub); err == nil {
		t.Error("ConvertFrom of kind Pod succeeded")
	}
}
