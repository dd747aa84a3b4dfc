package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateAPIRejects(t *testing.T) {
	good := APIOptions{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true}
	tests := []struct {
		name    string
		change  func(*APIOptions)
		prepare func(t *testing.T, dir string)
		input   string
		is      error
		want    []string
	}{
		{name: "kind lower case", change: func(o *APIOptions) { o.Kind = "frigate" }, input: "--kind", want: []string{`"frigate"`, "UpperCamelCase"}},
		{name: "kind with underscore", change: func(o *APIOptions) { o.Kind = "Fri_gate" }, input: "--kind", want: []string{`"Fri_gate"`}},
		{name: "version without a number", change: func(o *APIOptions) { o.Version = "v1alpha" }, input: "--version", want: []string{`"v1alpha"`, "v1alpha1"}},
		{name: "version zero", change: func(o *APIOptions) { o.Version = "v0" }, input: "--version", want: []string{`"v0"`}},
		{name: "version without v", change: func(o *APIOptions) { o.Version = "1" }, input: "--version", want: []string{`"1"`}},
		{name: "group upper case", change: func(o *APIOptions) { o.Group = "Ship" }, input: "--group", want: []string{`"Ship"`, "DNS subdomain"}},
		{name: "group with underscore", change: func(o *APIOptions) { o.Group = "ship_yard" }, input: "--group", want: []string{`"ship_yard"`}},
		{name: "no group", change: func(o *APIOptions) { o.Group = "" }, input: "--group", want: []string{"--group"}},
		{
			name: "not built-in with --resource=false", change: func(o *APIOptions) { o.Resource = false },
			input: "--group", want: []string{`"ship"`, "built-in", "apps"},
		},
		{
			name: "nothing to scaffold", change: func(o *APIOptions) { o.Resource, o.Controller, o.Group = false, false, "apps" },
			want: []string{"--resource=false and --controller=false"},
		},
		{name: "outside a project", prepare: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ProjectFile)) }, is: ErrNotProject, want: []string{"PROJECT", "opkit init"}},
		{
			name: "API in PROJECT already",
			prepare: func(t *testing.T, dir string) {
				p, err := LoadProject(dir)
				if err != nil {
					t.Fatal(err)
				}
				p.APIs = append(p.APIs, API{Group: "ship", Version: "v1", Kind: "Frigate", Resource: true})
				b, _ := p.marshal()
				write(t, filepath.Join(dir, ProjectFile), string(b))
			},
			is: ErrAPIExists, want: []string{"ship/v1 Frigate"},
		},
		{
			name:   "core API in PROJECT already, named by the empty group",
			change: func(o *APIOptions) { o.Group, o.Kind, o.Resource = "", "ConfigMap", false },
			prepare: func(t *testing.T, dir string) {
				p, _ := LoadProject(dir)
				p.APIs = append(p.APIs, API{Group: "core", Version: "v1", Kind: "ConfigMap", Controller: true})
				b, _ := p.marshal()
				write(t, filepath.Join(dir, ProjectFile), string(b))
			},
			is: ErrAPIExists, want: []string{"core/v1 ConfigMap"},
		},
		{
			name: "types file there already",
			prepare: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "api", "v1", "frigate_types.go"), "package v1\n")
			},
			is: ErrAPIExists, want: []string{"api/v1/frigate_types.go"},
		},
		{
			name: "second group in a version",
			prepare: func(t *testing.T, dir string) {
				p, _ := LoadProject(dir)
				p.APIs = append(p.APIs, API{Group: "fleet", Version: "v1", Kind: "Admiral", Resource: true})
				b, _ := p.marshal()
				write(t, filepath.Join(dir, ProjectFile), string(b))
			},
			input: "--group", want: []string{"api/v1 holds group fleet"},
		},
		{
			name: "marker gone from main.go",
			prepare: func(t *testing.T, dir string) {
				replaceIn(t, filepath.Join(dir, "cmd", "main.go"), markerControllers, "")
			},
			want: []string{"cmd/main.go", markerControllers},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newProject(t)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			opts := good
			if tt.change != nil {
				tt.change(&opts)
			}
			before := tree(t, dir)
			err := CreateAPI(t.Context(), dir, opts)
			checkError(t, err, tt.input, tt.is, tt.want)
			checkUnchanged(t, dir, before)
		})
	}
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, strings.Replace(string(b), old, new, 1))
}

// TestCreateAPIRollsBack makes the commands create api runs fail for real,
// after it wrote its files: it must restore the files it changed and
// remove those it created.
func TestCreateAPIRollsBack(t *testing.T) {
	opts := APIOptions{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true}
	t.Run("go mod tidy", func(t *testing.T) {
		dir := newProject(t)
		if err := os.Remove(filepath.Join(dir, "go.mod")); err != nil {
			t.Fatal(err)
		}
		before := tree(t, dir)
		err := CreateAPI(t.Context(), dir, opts)
		checkError(t, err, "", nil, []string{"go mod tidy", "left as it was"})
		checkUnchanged(t, dir, before)
	})
	t.Run("make manifests", func(t *testing.T) {
		t.Setenv("GOFLAGS", "-mod=mod")
		dir := newProject(t)
		if err := os.Remove(filepath.Join(dir, "Makefile")); err != nil {
			t.Fatal(err)
		}
		before := tree(t, dir)
		err := CreateAPI(t.Context(), dir, opts)
		checkError(t, err, "", nil, []string{"make manifests", "left as it was", "manifests"})
		checkUnchanged(t, dir, before)
	})
}

// TestCreateAPIComposes renders three APIs one after the other, as three
// create api calls do, and checks that each lands at its markers once.
func TestCreateAPIComposes(t *testing.T) {
	dir := newProject(t)
	for _, o := range []APIOptions{
		{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true},
		{Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true},
		{Group: "apps", Version: "v1", Kind: "Deployment", Controller: true},
		{Group: "", Version: "v1", Kind: "Namespace", Controller: true},
	} {
		p, err := LoadProject(dir)
		if err != nil {
			t.Fatal(err)
		}
		d, err := o.resolve(p)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := apiFiles(dir, p, o, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.write(dir); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for path, lines := range map[string][]string{
		"cmd/main.go": {
			`shipv1 "example.com/acme-operator/api/v1"`, `"example.com/acme-operator/internal/controller"`,
			"shipv1.AddToScheme(scheme),", "controller.SetupFrigate(mgr)", "controller.SetupAdmiral(mgr)", "controller.SetupDeployment(mgr)",
		},
		"api/v1/groupversion_info.go":       {"&Frigate{}, &FrigateList{},", "&Admiral{}, &AdmiralList{},", `Group: "ship.example.com"`},
		"api/v1/frigate_types.go":           {"scope=Namespaced", "path=frigates"},
		"api/v1/admiral_types.go":           {"scope=Cluster", "path=admirals"},
		"config/samples/kustomization.yaml": {"- ship_v1_frigate.yaml", "- ship_v1_admiral.yaml"},
		"config/crd/kustomization.yaml":     {"- bases/ship.example.com_frigates.yaml", "- bases/ship.example.com_admirals.yaml"},
		"internal/controller/deployment_controller.go": {
			`appsv1 "k8s.io/api/apps/v1"`, "groups=apps,resources=deployments,verbs=get;list;watch",
		},
		"internal/controller/admiral_controller_test.go": {`GenerateName: "test-"`},
		// A test's object of a cluster-scoped built-in kind must not take
		// the name of the test's namespace: for a Namespace, it is taken.
		"internal/controller/namespace_controller_test.go": {`GenerateName: "test-"`},
		"PROJECT": {"kind: Frigate", "kind: Admiral", "kind: Deployment", "kind: Namespace"},
		// Admin, editor and viewer roles for the kinds of its own, none
		// for the built-in ones.
		"config/rbac/kustomization.yaml": {"- frigate_admin_role.yaml", "- frigate_editor_role.yaml", "- frigate_viewer_role.yaml", "- admiral_admin_role.yaml", "- admiral_editor_role.yaml", "- admiral_viewer_role.yaml"},
		"config/rbac/frigate_admin_role.yaml": {
			"name: frigate-admin-role", "  - ship.example.com\n  resources:\n  - frigates\n  verbs:\n  - '*'", "  - frigates/status",
		},
		"config/rbac/frigate_editor_role.yaml": {
			"name: frigate-editor-role", `rbac.authorization.k8s.io/aggregate-to-edit: "true"`, "  - ship.example.com\n  resources:\n  - frigates\n  verbs:\n  - create",
		},
		"config/rbac/admiral_viewer_role.yaml": {
			"name: admiral-viewer-role", `rbac.authorization.k8s.io/aggregate-to-view: "true"`, "  - admirals/status", "cluster-scoped",
		},
	} {
		got := read(path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "config/rbac/deployment_editor_role.yaml")); err == nil {
		t.Error("create api --resource=false wrote an editor role for a built-in kind")
	}
	if s := read("config/samples/ship_v1_admiral.yaml"); strings.Contains(s, "namespace:") {
		t.Errorf("the cluster-scoped sample has a namespace:\n%s", s)
	}
}

func TestPluralize(t *testing.T) {
	for kind, want := range map[string]string{
		"Frigate": "Frigates", "Policy": "Policies", "Ingress": "Ingresses", "Gateway": "Gateways",
		"Box": "Boxes", "Batch": "Batches", "Mesh": "Meshes", "NetworkPolicy": "NetworkPolicies",
	} {
		if got := pluralize(kind); got != want {
			t.Errorf("pluralize(%s) = %s, want %s", kind, got, want)
		}
	}
}
