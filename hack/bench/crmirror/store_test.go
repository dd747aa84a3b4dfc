package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// A store that watches ConfigMaps only never reads a Secret, since a read
// of a type starts an informer of it in controller-runtime's cache: no
// Secret index, no Secret copies, and a Secret source refused.
func TestConfigMapsOnlyStoreReadsNoSecret(t *testing.T) {
	r := &recordingReader{}
	s := store{r: r, configMapsOnly: true}
	fi := &recordingIndexer{}
	if err := s.indexFields(t.Context(), fi); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*v1alpha1.Mirror", "*v1.ConfigMap"}, fi.types); diff != "" {
		t.Errorf("indexed types (-want +got):\n%s", diff)
	}
	if copies, err := s.Copies(v1alpha1.KindSecret, "ns", "m"); err != nil || len(copies) != 0 {
		t.Errorf("Copies of Secrets = %v, %v; want none", copies, err)
	}
	if _, err := s.Object(t.Context(), v1alpha1.KindSecret, "ns", "s"); !errors.Is(err, errConfigMapsOnly) {
		t.Errorf("Object of a Secret: %v, want %v", err, errConfigMapsOnly)
	}
	if _, err := s.Meta(v1alpha1.KindSecret, "ns", "s"); !errors.Is(err, errConfigMapsOnly) {
		t.Errorf("Meta of a Secret: %v, want %v", err, errConfigMapsOnly)
	}
	if _, err := s.Copies(v1alpha1.KindConfigMap, "ns", "m"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*v1.ConfigMapList"}, r.types); diff != "" {
		t.Errorf("types read (-want +got):\n%s", diff)
	}

	all := &recordingIndexer{}
	if err := (store{r: r}).indexFields(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*v1alpha1.Mirror", "*v1.ConfigMap", "*v1.Secret"}, all.types); diff != "" {
		t.Errorf("indexed types of the full store (-want +got):\n%s", diff)
	}
}

// recordingReader records the types read and returns them empty.
type recordingReader struct{ types []string }

func (r *recordingReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.types = append(r.types, fmt.Sprintf("%T", obj))
	return nil
}

func (r *recordingReader) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	r.types = append(r.types, fmt.Sprintf("%T", l))
	return nil
}

// recordingIndexer records the types indexed.
type recordingIndexer struct{ types []string }

func (f *recordingIndexer) IndexField(_ context.Context, obj client.Object, _ string, _ client.IndexerFunc) error {
	f.types = append(f.types, fmt.Sprintf("%T", obj))
	return nil
}
