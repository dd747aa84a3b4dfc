package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestFillObjectShapes(t *testing.T) {
	const namespaces = 10
	sizes, ssa := 0, 0
	for i := range 200 {
		for _, kind := range []string{"ConfigMap", "Secret"} {
			obj, meta, isSSA := fillObject(kind, i, namespaces)
			if isSSA {
				ssa++
			}
			if meta.Namespace != fillNamespace(i%namespaces) {
				t.Errorf("%s %d in %s", kind, i, meta.Namespace)
			}
			for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", fillLabel} {
				if meta.Labels[l] == "" {
					t.Errorf("%s %d has no label %s", kind, i, l)
				}
			}
			values := map[string]int{}
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				for k, v := range o.Data {
					values[k] = len(v)
					if len(v) < minValueBytes || len(v) > maxValueBytes {
						t.Errorf("ConfigMap %d key %s is %d bytes, want %d–%d", i, k, len(v), minValueBytes, maxValueBytes)
					}
				}
			case *corev1.Secret:
				for k, v := range o.Data {
					values[k] = len(v)
				}
				if crt, ok := o.Data["tls.crt"]; ok && !strings.HasPrefix(string(crt), "-----BEGIN CERTIFICATE-----\n") {
					t.Errorf("Secret %d's tls.crt is not PEM: %.40q", i, crt)
				}
			}
			if n := len(values); n < minKeys || n > maxKeys {
				t.Errorf("%s %d has %d keys, want %d–%d", kind, i, n, minKeys, maxKeys)
			}
			for _, n := range values {
				sizes += n
			}
		}
	}
	if ssa != 200 {
		t.Errorf("%d of 400 objects by server-side apply, want half", ssa)
	}
	// A few hundred bytes to a few KiB a key, 3–6 keys: a few KiB an
	// object on average.
	if avg := sizes / 400; avg < 2<<10 || avg > 8<<10 {
		t.Errorf("objects hold %d bytes on average, want 2–8 KiB", avg)
	}
}

func TestSmallFillObjectShapes(t *testing.T) {
	const namespaces = 10
	names := map[string]bool{}
	for i := range 200 {
		for _, kind := range []string{"ConfigMap", "Secret"} {
			obj, meta := smallFillObject(kind, i, namespaces)
			if meta.Namespace != smallFillNamespace(i%namespaces) {
				t.Errorf("%s %d in %s", kind, i, meta.Namespace)
			}
			if names[meta.Namespace+"/"+meta.Name] {
				t.Errorf("%s %d: %s/%s twice", kind, i, meta.Namespace, meta.Name)
			}
			names[meta.Namespace+"/"+meta.Name] = true
			if diff := cmp.Diff(map[string]string{fillLabel: "true"}, meta.Labels); diff != "" {
				t.Errorf("%s %d labels (-want +got):\n%s", kind, i, diff)
			}
			if meta.Annotations != nil {
				t.Errorf("%s %d has annotations %v", kind, i, meta.Annotations)
			}
			var values []int
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				for _, v := range o.Data {
					values = append(values, len(v))
				}
			case *corev1.Secret:
				for _, v := range o.Data {
					values = append(values, len(v))
				}
			}
			if diff := cmp.Diff([]int{smallValue}, values); diff != "" {
				t.Errorf("%s %d value sizes (-want +got):\n%s", kind, i, diff)
			}
		}
	}
}

func TestFillObjectIsDeterministic(t *testing.T) {
	a, _, _ := fillObject("Secret", 42, 10)
	b, _, _ := fillObject("Secret", 42, 10)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same object twice differs (-first +second):\n%s", diff)
	}
}

func TestWithLastApplied(t *testing.T) {
	obj, meta, ssa := fillObject("ConfigMap", 4, 10)
	if ssa {
		t.Fatal("object 4 is server-side applied; the test wants a client-side one")
	}
	if err := withLastApplied(obj, meta); err != nil {
		t.Fatal(err)
	}
	var applied corev1.ConfigMap
	if err := json.Unmarshal([]byte(meta.Annotations[lastApplied]), &applied); err != nil {
		t.Fatalf("the annotation is not the object's JSON: %v", err)
	}
	want := obj.(*corev1.ConfigMap).DeepCopy()
	want.Annotations = nil // kubectl leaves the annotation out of itself
	if diff := cmp.Diff(want, &applied); diff != "" {
		t.Errorf("last-applied configuration (-want +got):\n%s", diff)
	}
	if applied.APIVersion != "v1" || applied.Kind != "ConfigMap" {
		t.Errorf("last-applied configuration has apiVersion %q, kind %q, as kubectl writes them", applied.APIVersion, applied.Kind)
	}
}

// The fill's objects reach the API server shaped as kubectl apply and
// server-side apply leave them, and unfill deletes them.
func TestFillInAPIServer(t *testing.T) {
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	f := fillOptions{configMaps: 6, secrets: 4, namespaces: 2, shape: shapeRealistic}
	if err := fillCluster(t.Context(), cs, f); err != nil {
		t.Fatal(err)
	}
	sel := metav1.ListOptions{LabelSelector: fillLabel + "=true"}
	cms, err := cs.CoreV1().ConfigMaps("").List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets("").List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != f.configMaps || len(secrets.Items) != f.secrets {
		t.Fatalf("%d ConfigMaps and %d Secrets in the API server, want %d and %d", len(cms.Items), len(secrets.Items), f.configMaps, f.secrets)
	}
	var metas []metav1.ObjectMeta
	for _, c := range cms.Items {
		metas = append(metas, c.ObjectMeta)
	}
	for _, s := range secrets.Items {
		metas = append(metas, s.ObjectMeta)
	}
	for _, m := range metas {
		var managers []string
		for _, e := range m.ManagedFields {
			managers = append(managers, e.Manager+"/"+string(e.Operation))
		}
		ssa := m.Labels["app.kubernetes.io/managed-by"] == "Helm"
		want := []string{csaManager + "/" + string(metav1.ManagedFieldsOperationUpdate)}
		if ssa {
			want = []string{ssaManager + "/" + string(metav1.ManagedFieldsOperationApply)}
		}
		if diff := cmp.Diff(want, managers); diff != "" {
			t.Errorf("%s/%s managed by (-want +got):\n%s", m.Namespace, m.Name, diff)
		}
		if _, has := m.Annotations[lastApplied]; has == ssa {
			t.Errorf("%s/%s: server-side applied %v, has the last-applied annotation %v", m.Namespace, m.Name, ssa, has)
		}
	}
	if err := unfill(t.Context(), cs, f); err != nil {
		t.Fatal(err)
	}
	if l, err := cs.CoreV1().ConfigMaps("").List(t.Context(), sel); err != nil || len(l.Items) != 0 {
		t.Errorf("after unfill: %d ConfigMaps left, %v", len(l.Items), err)
	}
}

// The small fill's objects reach the API server with one key, no
// annotation and the one Update entry of a plain create.
func TestSmallFillInAPIServer(t *testing.T) {
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	f := fillOptions{configMaps: 3, secrets: 2, namespaces: 2, shape: shapeSmall}
	if err := fillCluster(t.Context(), cs, f); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unfill(t.Context(), cs, f); err != nil {
			t.Error(err)
		}
	}()
	sel := metav1.ListOptions{LabelSelector: fillLabel + "=true"}
	cms, err := cs.CoreV1().ConfigMaps("").List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets("").List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != f.configMaps || len(secrets.Items) != f.secrets {
		t.Fatalf("%d ConfigMaps and %d Secrets in the API server, want %d and %d", len(cms.Items), len(secrets.Items), f.configMaps, f.secrets)
	}
	for _, c := range cms.Items {
		if len(c.Data) != 1 || len(c.Annotations) != 0 || len(c.ManagedFields) != 1 || c.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("ConfigMap %s/%s: %d keys, annotations %v, managedFields %+v", c.Namespace, c.Name, len(c.Data), c.Annotations, c.ManagedFields)
		}
	}
	for _, s := range secrets.Items {
		if len(s.Data) != 1 || len(s.Annotations) != 0 || len(s.ManagedFields) != 1 {
			t.Errorf("Secret %s/%s: %d keys, annotations %v, %d managedFields entries", s.Namespace, s.Name, len(s.Data), s.Annotations, len(s.ManagedFields))
		}
	}
}
