package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
