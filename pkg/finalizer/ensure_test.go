package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/finalizer"
)

const (
	ours  = "test.opkit.dev/cleanup"
	other = "other.example.com/keep"
)

// Ensure adds the finalizer with one request, keeps the finalizers others
// hold, sends nothing once it is there, and never modifies its argument.
func TestEnsure(t *testing.T) {
	ns := env.Namespace(t)
	for _, have := range [][]string{nil, {other}} {
		c, requests := newClient(t)
		cm := newConfigMap(t, ns, have...)
		before := cm.DeepCopy()
		added, err := finalizer.Ensure(t.Context(), c, cm, ours)
		if err != nil || !added {
			t.Fatalf("Ensure with %v = %v, %v; want true, nil", have, added, err)
		}
		unchanged(t, before, cm)
		if n := requests.Load(); n != 1 {
			t.Errorf("Ensure with %v sent %d requests, want 1", have, n)
		}
		want := append(slices.Clone(have), ours)
		if d := cmp.Diff(want, serverFinalizers(t, cm)); d != "" {
			t.Errorf("finalizers on the server (-want +got):\n%s", d)
		}

		cur, err := env.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		requests.Store(0)
		added, err = finalizer.Ensure(t.Context(), c, cur, ours)
		if err != nil || added {
			t.Errorf("Ensure again = %v, %v; want false, nil", added, err)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("Ensure on an object holding the finalizer sent %d requests, want 0", n)
		}
	}
}

// A change of the finalizers between the read and Ensure makes it fail with
// a Conflict, whatever the change; a change elsewhere in the object does
// not get in the way.
func TestEnsureConcurrentChange(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name         string
		have, server []string // finalizers when read, and when Ensure runs
	}{
		{"added to none", nil, []string{other}},
		{"added to some", []string{other}, []string{other, "third.example.com/x"}},
		{"removed", []string{other}, nil},
		{"ours added meanwhile", nil, []string{ours}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t)
			cm := newConfigMap(t, ns, tt.have...)
			setFinalizers(t, cm, tt.server...)
			added, err := finalizer.Ensure(t.Context(), c, cm, ours)
			if !apierrors.IsConflict(err) || added {
				t.Fatalf("Ensure = %v, %v; want false and a Conflict", added, err)
			}
			if !strings.Contains(err.Error(), "changed since it was read") {
				t.Errorf("the Conflict does not say why: %v", err)
			}
			if d := cmp.Diff(tt.server, serverFinalizers(t, cm)); d != "" {
				t.Errorf("finalizers on the server (-want +got):\n%s", d)
			}
		})
	}

	t.Run("label changed", func(t *testing.T) {
		c, _ := newClient(t)
		cm := newConfigMap(t, ns)
		cur := cm.DeepCopy()
		cur.Labels = map[string]string{"changed": "yes"}
		if _, err := env.Client().CoreV1().ConfigMaps(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if added, err := finalizer.Ensure(t.Context(), c, cm, ours); err != nil || !added {
			t.Fatalf("Ensure after a label change = %v, %v; want true, nil", added, err)
		}
	})
}

// Ensure on an object being deleted sends nothing and says why; on a stale
// copy that does not show the deletion yet, it conflicts instead of the API
// server's refusal to add a finalizer then.
func TestEnsureDeleting(t *testing.T) {
	ns := env.Namespace(t)
	c, requests := newClient(t)
	cm := newConfigMap(t, ns, other) // kept alive by other
	if err := env.Client().CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := finalizer.Ensure(t.Context(), c, cm, ours)
	if !apierrors.IsConflict(err) {
		t.Errorf("Ensure on a stale copy of a deleted object: %v; want a Conflict", err)
	}

	cur, err := env.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	_, err = finalizer.Ensure(t.Context(), c, cur, ours)
	if !errors.Is(err, finalizer.ErrDeleting) {
		t.Errorf("Ensure on a deleted object: %v; want ErrDeleting", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("Ensure on a deleted object sent %d requests, want 0", n)
	}
}

// Names are checked before any request, with the rule in the error.
func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		ok, remove bool // accepted by Ensure and Finalize; by Remove
	}{
		{"samples.opkit.dev/cleanup", true, true},
		{"a.b/c-d.e_f", true, true},
		{"legacy-finalizer", false, true},
		{"", false, false},
		{"Samples.opkit.dev/cleanup", false, false},
		{"samples.opkit.dev/", false, false},
		{"samples.opkit.dev/a/b", false, false},
		{"samples.opkit.dev/has space", false, false},
	}
	c, requests := newClient(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never-sent", Namespace: "default"}}
	cleanup := func(context.Context) error { return errors.New("cleanup must not run") }
	for _, tt := range tests {
		err := finalizer.Validate(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, finalizer.ErrInvalidName)) {
			t.Errorf("Validate(%q) = %v; want ok=%v or ErrInvalidName", tt.name, err, tt.ok)
		}
		if tt.ok {
			continue
		}
		if _, err := finalizer.Ensure(t.Context(), c, cm, tt.name); !errors.Is(err, finalizer.ErrInvalidName) {
			t.Errorf("Ensure(%q) = %v; want ErrInvalidName", tt.name, err)
		}
		if _, err := finalizer.Finalize(t.Context(), c, cm, tt.name, cleanup); !errors.Is(err, finalizer.ErrInvalidName) {
			t.Errorf("Finalize(%q) = %v; want ErrInvalidName", tt.name, err)
		}
		if _, err := finalizer.Remove(t.Context(), c, cm, tt.name); errors.Is(err, finalizer.ErrInvalidName) == tt.remove {
			t.Errorf("Remove(%q) = %v; want ErrInvalidName: %v", tt.name, err, !tt.remove)
		}
	}
	if err := finalizer.Validate("cleanup"); err == nil || !strings.Contains(err.Error(), "domain prefix") {
		t.Errorf("Validate(%q) = %v; want it to ask for a domain prefix", "cleanup", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent for invalid names, want 0", n)
	}
}
