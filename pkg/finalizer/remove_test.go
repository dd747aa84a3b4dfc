package finalizer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/finalizer"
)

// Remove deletes only the finalizer named, every entry of it, with one
// request; it sends nothing when the object does not hold it, and never
// modifies its argument.
func TestRemove(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name       string
		remove     string
		have, want []string
	}{
		{"only", ours, []string{ours}, nil},
		{"among others", ours, []string{other, ours, "third.example.com/x"}, []string{other, "third.example.com/x"}},
		{"twice", ours, []string{ours, other, ours}, []string{other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, requests := newClient(t)
			cm := newConfigMap(t, ns, tt.have...)
			before := cm.DeepCopy()
			removed, err := finalizer.Remove(t.Context(), c, cm, tt.remove)
			if err != nil || !removed {
				t.Fatalf("Remove = %v, %v; want true, nil", removed, err)
			}
			unchanged(t, before, cm)
			if n := requests.Load(); n != 1 {
				t.Errorf("Remove sent %d requests, want 1", n)
			}
			if d := cmp.Diff(tt.want, serverFinalizers(t, cm)); d != "" {
				t.Errorf("finalizers on the server (-want +got):\n%s", d)
			}
		})
	}

	t.Run("absent", func(t *testing.T) {
		c, requests := newClient(t)
		cm := newConfigMap(t, ns, other)
		removed, err := finalizer.Remove(t.Context(), c, cm, ours)
		if err != nil || removed {
			t.Errorf("Remove = %v, %v; want false, nil", removed, err)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("Remove of a finalizer the object does not hold sent %d requests, want 0", n)
		}
	})
}

// A change that moves or removes the entry between the read and Remove makes
// it fail with a Conflict, whatever the change; an entry appended meanwhile
// neither conflicts nor is lost.
func TestRemoveConcurrentChange(t *testing.T) {
	ns := env.Namespace(t)
	const third = "third.example.com/x"
	tests := []struct {
		name         string
		have, server []string // finalizers when read, and when Remove runs
	}{
		{"moved down", []string{other, ours}, []string{ours}},
		{"index gone", []string{other, third, ours}, []string{third, ours}},
		{"list gone", []string{ours}, nil},
		{"replaced", []string{ours}, []string{other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t)
			cm := newConfigMap(t, ns, tt.have...)
			setFinalizers(t, cm, tt.server...)
			removed, err := finalizer.Remove(t.Context(), c, cm, ours)
			if !apierrors.IsConflict(err) || removed {
				t.Fatalf("Remove = %v, %v; want false and a Conflict", removed, err)
			}
			if !strings.Contains(err.Error(), "changed since it was read") {
				t.Errorf("the Conflict does not say why: %v", err)
			}
			if d := cmp.Diff(tt.server, serverFinalizers(t, cm)); d != "" {
				t.Errorf("finalizers on the server (-want +got):\n%s", d)
			}
		})
	}

	t.Run("appended", func(t *testing.T) {
		c, _ := newClient(t)
		cm := newConfigMap(t, ns, ours)
		setFinalizers(t, cm, ours, other)
		if removed, err := finalizer.Remove(t.Context(), c, cm, ours); err != nil || !removed {
			t.Fatalf("Remove = %v, %v; want true, nil", removed, err)
		}
		if d := cmp.Diff([]string{other}, serverFinalizers(t, cm)); d != "" {
			t.Errorf("finalizers on the server (-want +got):\n%s", d)
		}
	})
}

// Remove of the finalizer of an object that is gone has nothing left to do.
func TestRemoveGone(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	cm := newConfigMap(t, ns, ours)
	setFinalizers(t, cm)
	if err := env.Client().CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if removed, err := finalizer.Remove(t.Context(), c, cm, ours); err != nil || removed {
		t.Errorf("Remove on a deleted object = %v, %v; want false, nil", removed, err)
	}
}

// Finalize walks an object through its life: the finalizer is ensured while
// it lives; once it is deleted, cleanup runs until it succeeds, and only
// then the finalizer goes and with it the object.
func TestFinalize(t *testing.T) {
	ns := env.Namespace(t)
	c, _ := newClient(t)
	cm := newConfigMap(t, ns, other)
	var cleanups int
	failing := errors.New("cleanup failed")
	cleanupErr := failing
	cleanup := func(context.Context) error { cleanups++; return cleanupErr }
	get := func() *corev1.ConfigMap {
		t.Helper()
		cur, err := env.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}

	deleting, err := finalizer.Finalize(t.Context(), c, cm, ours, cleanup)
	if err != nil || deleting {
		t.Fatalf("Finalize on a live object = %v, %v; want false, nil", deleting, err)
	}
	if d := cmp.Diff([]string{other, ours}, serverFinalizers(t, cm)); d != "" {
		t.Errorf("finalizers on the server (-want +got):\n%s", d)
	}

	if err := env.Client().CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cur := get()
	before := cur.DeepCopy()
	deleting, err = finalizer.Finalize(t.Context(), c, cur, ours, cleanup)
	if !deleting || !errors.Is(err, failing) {
		t.Fatalf("Finalize with a failing cleanup = %v, %v; want true and the cleanup's error", deleting, err)
	}
	unchanged(t, before, cur)
	if d := cmp.Diff([]string{other, ours}, serverFinalizers(t, cm)); d != "" {
		t.Errorf("finalizers on the server after a failed cleanup (-want +got):\n%s", d)
	}

	cleanupErr = nil
	deleting, err = finalizer.Finalize(t.Context(), c, cur, ours, cleanup)
	if !deleting || err != nil {
		t.Fatalf("Finalize = %v, %v; want true, nil", deleting, err)
	}
	if d := cmp.Diff([]string{other}, serverFinalizers(t, cm)); d != "" {
		t.Errorf("finalizers on the server after cleanup (-want +got):\n%s", d)
	}

	deleting, err = finalizer.Finalize(t.Context(), c, get(), ours, cleanup)
	if !deleting || err != nil {
		t.Fatalf("Finalize without the finalizer = %v, %v; want true, nil", deleting, err)
	}
	if cleanups != 2 {
		t.Errorf("cleanup ran %d times, want 2 (once failing, once succeeding)", cleanups)
	}
}
