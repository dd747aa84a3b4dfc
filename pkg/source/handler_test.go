package source_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

type cmEvent = source.Event[*corev1.ConfigMap]

func owned(cm *corev1.ConfigMap, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	cm.OwnerReferences = refs
	return cm
}

func ownerRef(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &controller}
}

func TestEnqueueObject(t *testing.T) {
	cm1, cm2 := configMap("ns", "a", 1), configMap("ns", "a", 2)
	tests := []struct {
		name  string
		event cmEvent
		want  []item
	}{
		{"initial list is low", cmEvent{Type: source.Create, Object: cm1, InInitialList: true}, []item{low("ns", "a")}},
		{"live create is normal", cmEvent{Type: source.Create, Object: cm1}, []item{normal("ns", "a")}},
		{"update is normal", cmEvent{Type: source.Update, Old: cm1, Object: cm2}, []item{normal("ns", "a")}},
		{"resync is low", cmEvent{Type: source.Update, Old: cm2, Object: cm2}, []item{low("ns", "a")}},
		{"delete is normal", cmEvent{Type: source.Delete, Object: cm2}, []item{normal("ns", "a")}},
		{"unknown delete is normal", cmEvent{Type: source.Delete, Object: cm2, StateUnknown: true}, []item{normal("ns", "a")}},
		{"cluster-scoped", cmEvent{Type: source.Create, Object: configMap("", "c", 1)}, []item{normal("", "c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue[reconcile.Request](t)
			source.EnqueueObject[*corev1.ConfigMap]().Handle(tt.event, q)
			if diff := cmp.Diff(tt.want, drain(q)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnqueueOwner(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cm := func(rv int, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		return owned(configMap("ns", "cm", rv), refs...)
	}
	ctrl := ownerRef("apps/v1", "Deployment", "d1", true)
	other := ownerRef("apps/v1", "Deployment", "d2", false)
	oldVersion := ownerRef("apps/v1beta1", "Deployment", "d3", true)
	wrongGroup := ownerRef("example.com/v1", "Deployment", "x", true)
	wrongKind := ownerRef("apps/v1", "StatefulSet", "s", true)
	tests := []struct {
		name  string
		gk    schema.GroupKind
		opts  source.OwnerOptions
		event cmEvent
		want  []item
	}{
		{"controller owner", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Create, Object: cm(1, other, ctrl, wrongGroup, wrongKind)}, []item{normal("ns", "d1")}},
		{"all owners", deploy, source.OwnerOptions{AllOwners: true},
			cmEvent{Type: source.Create, Object: cm(1, other, ctrl, wrongGroup, wrongKind)}, []item{normal("ns", "d1"), normal("ns", "d2")}},
		{"any version", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Create, Object: cm(1, oldVersion)}, []item{normal("ns", "d3")}},
		{"core group", schema.GroupKind{Kind: "Service"}, source.OwnerOptions{},
			cmEvent{Type: source.Create, Object: cm(1, ownerRef("v1", "Service", "svc", true), ctrl)}, []item{normal("ns", "svc")}},
		{"cluster-scoped owner", schema.GroupKind{Kind: "Namespace"}, source.OwnerOptions{Scope: source.ClusterScoped()},
			cmEvent{Type: source.Create, Object: cm(1, ownerRef("v1", "Namespace", "ns", true))}, []item{normal("", "ns")}},
		{"namespaced owner by its scope", deploy, source.OwnerOptions{Scope: fixedScope{namespaced: true}},
			cmEvent{Type: source.Create, Object: cm(1, ctrl)}, []item{normal("ns", "d1")}},
		{"owner kind not served yet", deploy, source.OwnerOptions{Scope: fixedScope{err: cache.ErrNotInstalled}},
			cmEvent{Type: source.Update, Old: cm(1, other), Object: cm(2, ctrl)}, nil},
		{"no owner", deploy, source.OwnerOptions{}, cmEvent{Type: source.Create, Object: cm(1)}, nil},
		{"initial list is low", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Create, Object: cm(1, ctrl), InInitialList: true}, []item{low("ns", "d1")}},
		{"update queues old and new owners", deploy, source.OwnerOptions{AllOwners: true},
			cmEvent{Type: source.Update, Old: cm(1, other), Object: cm(2, ctrl)}, []item{normal("ns", "d1"), normal("ns", "d2")}},
		{"update of an unchanged owner", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Update, Old: cm(1, ctrl), Object: cm(2, ctrl)}, []item{normal("ns", "d1")}},
		{"resync is low", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Update, Old: cm(2, ctrl), Object: cm(2, ctrl)}, []item{low("ns", "d1")}},
		{"delete", deploy, source.OwnerOptions{},
			cmEvent{Type: source.Delete, Object: cm(2, ctrl), StateUnknown: true}, []item{normal("ns", "d1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue[reconcile.Request](t)
			source.EnqueueOwner[*corev1.ConfigMap](tt.gk, tt.opts).Handle(tt.event, q)
			if diff := cmp.Diff(tt.want, drain(q)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

// fixedScope is a source.Scope that answers the same every time.
type fixedScope struct {
	namespaced bool
	err        error
}

func (s fixedScope) Namespaced() (bool, error) { return s.namespaced, s.err }

func TestEnqueueMapped(t *testing.T) {
	// Each ConfigMap maps to the objects its "targets" label names, in
	// namespace "other".
	byLabel := source.EnqueueMapped(func(cm *corev1.ConfigMap) []reconcile.Request {
		if t := cm.Labels["target"]; t != "" {
			return []reconcile.Request{req("other", t)}
		}
		return nil
	})
	cm := func(rv int, target string) *corev1.ConfigMap {
		c := configMap("ns", "cm", rv)
		if target != "" {
			c.Labels = map[string]string{"target": target}
		}
		return c
	}
	tests := []struct {
		name  string
		event cmEvent
		want  []item
	}{
		{"create", cmEvent{Type: source.Create, Object: cm(1, "a")}, []item{normal("other", "a")}},
		{"initial list is low", cmEvent{Type: source.Create, Object: cm(1, "a"), InInitialList: true}, []item{low("other", "a")}},
		{"no keys", cmEvent{Type: source.Create, Object: cm(1, "")}, nil},
		{"update maps old and new", cmEvent{Type: source.Update, Old: cm(1, "a"), Object: cm(2, "b")}, []item{normal("other", "a"), normal("other", "b")}},
		{"resync is low", cmEvent{Type: source.Update, Old: cm(2, "b"), Object: cm(2, "b")}, []item{low("other", "b")}},
		{"delete", cmEvent{Type: source.Delete, Object: cm(2, "b")}, []item{normal("other", "b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue[reconcile.Request](t)
			byLabel.Handle(tt.event, q)
			if diff := cmp.Diff(tt.want, drain(q)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}
