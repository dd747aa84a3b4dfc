package scaffold

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// externalType is what create webhook learns of another module's kind
// from its module: the kinds its package registers, and its CRD.
type externalType struct {
	module     string // module@version, as go.mod requires it
	kinds      []schema.GroupVersionKind
	crd        []byte // the CRD's YAML document, as found
	crdSource  string
	plural     string
	namespaced bool
	fixture    []byte // testdata: the fields the CRD's schema requires
}

// pinned are the modules whose versions opkit's own go.mod fixes for the
// project: another module that needs newer ones does not build with opkit.
var pinned = []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "sigs.k8s.io/controller-runtime"}

// loadExternal requires o's module in the project in dir (go get), checks
// that it keeps the project's Kubernetes modules, loads the kinds its
// package registers and finds the kind's CRD. It changes go.mod and
// go.sum: call it inside a transaction.
func loadExternal(ctx context.Context, dir string, o WebhookOptions) (*externalType, error) {
	before, err := requires(dir)
	if err != nil {
		return nil, err
	}
	query := o.ExternalAPIPath + "@latest"
	if o.ExternalAPIModule != "" {
		query = o.ExternalAPIModule
		if !strings.Contains(query, "@") {
			query += "@latest"
		}
	}
	if err := runIn(ctx, dir, "go", "get", query); err != nil {
		return nil, fmt.Errorf("create webhook: add %s to go.mod: %w\nCheck --external-api-path (the Go package that declares %s) and --external-api-module (module@version); the project is left as it was", query, err, o.Kind)
	}
	var info struct {
		Dir, Name string
		GoFiles   []string
		Module    struct{ Path, Version, Dir string }
	}
	// -mod=mod: go get adds the sums of the module, not yet of what its
	// package imports.
	if err := goJSON(ctx, dir, &info, "list", "-mod=mod", "-json", o.ExternalAPIPath); err != nil {
		return nil, fmt.Errorf("create webhook: --external-api-path %s is no package of the module go get added: %w\nGive the import path of the package that declares %s; the project is left as it was", o.ExternalAPIPath, err, o.Kind)
	}
	ext := &externalType{module: info.Module.Path + "@" + info.Module.Version}
	if err := keepsPins(dir, before, ext.module, info.Module.Path); err != nil {
		return nil, err
	}
	var probeErr error
	ext.kinds, probeErr = probeKinds(ctx, dir, o.ExternalAPIPath, ext.module, before)
	if err := keepsPins(dir, before, ext.module, info.Module.Path); err != nil {
		return nil, err
	}
	if probeErr != nil {
		return nil, probeErr
	}
	src := o.ExternalAPICRDs
	if src == "" {
		src = info.Module.Dir
	}
	if err := ext.findCRD(src, o); err != nil {
		return nil, err
	}
	return ext, nil
}

// keepsPins checks that dir's go.mod requires the pinned modules at the
// versions before, after mod (of module path) came in.
func keepsPins(dir string, before map[string]string, mod, path string) error {
	after, err := requires(dir)
	if err != nil {
		return err
	}
	for _, m := range pinned {
		if before[m] != "" && after[m] != before[m] {
			return fmt.Errorf("create webhook: %s requires %s %s, and the project %s (opkit's, which opkit is built and tested with): use a version of %s made for it, --external-api-module %s@<version>; the project is left as it was",
				mod, m, after[m], before[m], path, path)
		}
	}
	return nil
}

// requires are the versions of the pinned modules that dir's go.mod
// requires.
func requires(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("create webhook: %w", err)
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		return nil, fmt.Errorf("create webhook: read go.mod: %w", err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		if slices.Contains(pinned, r.Mod.Path) {
			out[r.Mod.Path] = r.Mod.Version
		}
	}
	return out, nil
}

// goJSON runs go with args in dir and decodes its JSON output into v.
func goJSON(ctx context.Context, dir string, v any, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return json.Unmarshal(out, v)
}

// probeSource lists the object kinds that a package's AddToScheme
// registers, of types the package declares: built in the project, so that
// it builds with the project's modules or not at all.
const probeSource = `package main

import (
	"encoding/json"
	"os"
	"strings"

	ext %q
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func main() {
	s := runtime.NewScheme()
	if err := ext.AddToScheme(s); err != nil {
		panic(err)
	}
	var kinds []string
	for gvk, t := range s.AllKnownTypes() {
		if t.PkgPath() != %q || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if obj, err := s.New(gvk); err == nil {
			if _, ok := obj.(metav1.Object); ok {
				kinds = append(kinds, gvk.Group+"/"+gvk.Version+"/"+gvk.Kind)
			}
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(kinds)
}
`

// probeKinds builds and runs probeSource for pkg in the project in dir.
func probeKinds(ctx context.Context, dir, pkg, mod string, pins map[string]string) ([]schema.GroupVersionKind, error) {
	tmp, err := os.MkdirTemp("", "opkit-probe-")
	if err != nil {
		return nil, fmt.Errorf("create webhook: %w", err)
	}
	defer os.RemoveAll(tmp)
	main := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(main, fmt.Appendf(nil, probeSource, pkg, pkg), 0o644); err != nil {
		return nil, fmt.Errorf("create webhook: %w", err)
	}
	var names []string
	if err := goJSON(ctx, dir, &names, "run", "-mod=mod", main); err != nil {
		var have []string
		for _, m := range pinned {
			have = append(have, m+" "+pins[m])
		}
		return nil, fmt.Errorf("create webhook: %s of %s does not build with the project's modules (%s), or has no AddToScheme: %w\nUse a version of the module made for them (--external-api-module), and the package that declares the kind and its AddToScheme; the project is left as it was", pkg, mod, strings.Join(have, ", "), err)
	}
	var kinds []schema.GroupVersionKind
	for _, n := range names {
		parts := strings.SplitN(n, "/", 3)
		if len(parts) == 3 {
			kinds = append(kinds, schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]})
		}
	}
	return kinds, nil
}

// findCRD finds o's kind's CRD among the YAML files at src, a file or a
// directory, and the version o names in it.
func (ext *externalType) findCRD(src string, o WebhookOptions) error {
	var searched int
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return nil
		}
		searched++
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("CustomResourceDefinition")) {
			return err
		}
		for doc := range bytes.SplitSeq(b, []byte("\n---")) {
			var crd apiextensionsv1.CustomResourceDefinition
			if yaml.Unmarshal(doc, &crd) != nil || crd.Kind != "CustomResourceDefinition" {
				continue // a template, or no CRD
			}
			if crd.Spec.Group == o.Group && crd.Spec.Names.Kind == o.Kind {
				ext.crd = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---")))
				ext.crdSource = filepath.Base(p)
				if rel, err := filepath.Rel(src, p); err == nil && rel != "." {
					ext.crdSource = filepath.ToSlash(rel)
				}
				if err := ext.useCRD(&crd, o); err != nil {
					return err
				}
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ext.crd == nil {
		return &InputError{Input: "--external-api-crds", Value: src,
			Allowed: fmt.Sprintf("none of its %d YAML files holds the CRD of %s %s, which the tests install: give the file of it (from %s's release manifests) with --external-api-crds", searched, o.Group, o.Kind, ext.module)}
	}
	return nil
}

// useCRD takes the kind's names and scope from crd, and the fields its
// schema requires in o's version.
func (ext *externalType) useCRD(crd *apiextensionsv1.CustomResourceDefinition, o WebhookOptions) error {
	ext.plural, ext.namespaced = crd.Spec.Names.Plural, crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	var served []string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		served = append(served, v.Name)
		if v.Name != o.Version {
			continue
		}
		obj := map[string]any{"spec": map[string]any{}}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			top := *v.Schema.OpenAPIV3Schema
			obj = required(top)
			// A spec may be optional while fields in it are not.
			obj["spec"] = required(top.Properties["spec"])
		}
		for _, f := range []string{"apiVersion", "kind", "metadata", "status"} {
			delete(obj, f)
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("create webhook: %w", err)
		}
		ext.fixture = append(fmt.Appendf(nil, fixtureHeader, o.Kind, ext.crdSource+" of "+ext.module), b...)
		return nil
	}
	return &InputError{Input: "--version", Value: o.Version,
		Allowed: fmt.Sprintf("the CRD of %s in %s serves %s only", o.Kind, ext.crdSource, strings.Join(served, ", "))}
}

const fixtureHeader = `# The fields of a %s that its CRD's schema requires, with placeholder
# values: the object the webhook tests create. Make it the object your
# webhooks expect. opkit create webhook wrote it from
# %s.
`

// required is an object of schema s with its required fields only, each
// with a placeholder value its type allows.
func required(s apiextensionsv1.JSONSchemaProps) map[string]any {
	out := map[string]any{}
	for _, name := range s.Required {
		if p, ok := s.Properties[name]; ok {
			out[name] = placeholder(p)
		}
	}
	return out
}

func placeholder(s apiextensionsv1.JSONSchemaProps) any {
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0].Raw, &v) == nil {
			return v
		}
	}
	switch s.Type {
	case "object":
		return required(s)
	case "array":
		if s.MinItems != nil && *s.MinItems > 0 && s.Items != nil && s.Items.Schema != nil {
			return []any{placeholder(*s.Items.Schema)}
		}
		return []any{}
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1
	case "boolean":
		return false
	}
	return "example"
}

// crdFile is the CRD's file in the project: the document found, below a
// comment that says where it came from and who installs it.
func (ext *externalType) crdFile(d webhookData) []byte {
	return fmt.Appendf(nil, "# The CRD of %s %s, from %s of %s.\n# The tests install it in their control plane; config/default does not:\n# the cluster must have it, installed with the project that owns it.\n---\n%s\n",
		d.GroupVersion, d.Kind, ext.crdSource, ext.module, ext.crd)
}
