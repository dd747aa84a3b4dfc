package plane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CustomResourceDefinitions in paths (files, or
// directories whose .yaml, .yml and .json files are read, not recursively;
// documents of other kinds are skipped) and returns once discovery serves
// every version of each, so that a client or cache can use them at once.
// modify, when not nil, may change each CRD before it is created.
func InstallCRDs(ctx context.Context, cfg *rest.Config, paths []string, modify func(*unstructured.Unstructured) error) error {
	var crds []*unstructured.Unstructured
	for _, p := range paths {
		got, err := readCRDs(p)
		if err != nil {
			return fmt.Errorf("read CRDs in %s: %w", p, err)
		}
		crds = append(crds, got...)
	}
	if modify != nil {
		for _, crd := range crds {
			if err := modify(crd); err != nil {
				return fmt.Errorf("install CRD %s: %w", crd.GetName(), err)
			}
		}
	}
	if len(crds) == 0 {
		return nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	for _, crd := range crds {
		_, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install CRD %s: %w", crd.GetName(), err)
		}
	}
	return waitServed(ctx, cfg, crds)
}

func crdFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(e.Name())) {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	return files, nil
}

func readCRDs(path string) ([]*unstructured.Unstructured, error) {
	return ReadManifests(path, "CustomResourceDefinition")
}

// ReadManifests returns the documents of the given kinds in path (a file,
// or a directory whose .yaml, .yml and .json files are read, not
// recursively).
func ReadManifests(path string, kinds ...string) ([]*unstructured.Unstructured, error) {
	files, err := crdFiles(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			u := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if slices.Contains(kinds, u.GetKind()) {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// waitServed waits until discovery lists every served version of each CRD.
func waitServed(ctx context.Context, cfg *rest.Config, crds []*unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			v, _ := v.(map[string]any)
			if served, _ := v["served"].(bool); !served {
				continue
			}
			name, _ := v["name"].(string)
			if err := waitDiscovered(ctx, dc, schema.GroupVersion{Group: group, Version: name}.String(), plural); err != nil {
				return fmt.Errorf("install CRD %s: %w", crd.GetName(), err)
			}
		}
	}
	return nil
}

func waitDiscovered(ctx context.Context, dc discovery.DiscoveryInterface, gv, plural string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s not served: %w", gv, plural, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
