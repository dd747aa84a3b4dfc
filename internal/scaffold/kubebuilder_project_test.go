package scaffold

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// everyField is a PROJECT with every field kubebuilder 4.16's config
// version 3 has, each set, and one field and one plugin no kubebuilder
// writes.
const everyField = `cliVersion: 4.16.0
componentConfig: true
domain: example.com
layout:
- go.kubebuilder.io/v4
- kustomize.common.kubebuilder.io/v2
- declarative.go.kubebuilder.io/v1
multigroup: true
namespaced: true
plugins:
  autoupdate.kubebuilder.io/v1-alpha: {}
  deploy-image.go.kubebuilder.io/v1-alpha:
    resources:
    - domain: example.com
      group: cache
      kind: Memcached
      options:
        containerCommand: memcached,--memory-limit=64
        containerPort: "11211"
        image: memcached:1.6
        runAsUser: "1001"
      version: v1alpha1
  grafana.kubebuilder.io/v1-alpha: {}
  helm.kubebuilder.io/v2-alpha:
    manifests: dist/install.yaml
    output: dist
  sample.example.com/v1: {}
projectName: everything
repo: example.com/everything
resources:
- api:
    crdVersion: v1
    namespaced: true
    ssa: true
  controller: true
  controllers:
  - name: memcached-backup
  domain: example.com
  group: cache
  kind: Memcached
  path: example.com/everything/api/cache/v1alpha1
  plural: memcacheds
  version: v1alpha1
  webhooks:
    conversion: true
    defaulting: true
    defaultingPath: /custom-mutate
    spoke:
    - v1beta1
    validation: true
    validationPath: /custom-validate
    webhookVersion: v1
- core: true
  group: apps
  kind: Deployment
  path: k8s.io/api/apps/v1
  version: v1
  webhooks:
    defaulting: true
    webhookVersion: v1
- domain: io
  external: true
  group: cert-manager
  kind: Certificate
  module: github.com/cert-manager/cert-manager@v1.20.2
  path: github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1
  version: v1
- api:
    crdVersion: v1beta1
  group: cache
  kind: Legacy
  version: v1
  webhooks:
    webhookVersion: v1beta1
    someday: true
  future: true
futureField: 1
version: "3"
`

// A line of PROJECT with a field, or with an item of layout.
var fieldLine = regexp.MustCompile(`^\s*(- )?[A-Za-z][\w.-]*(/[\w.-]+)?:|^- [\w.-]+/`)

// Every field of a PROJECT with all of them set is in the report, at its
// own line, as mapped or as needing a hand: nothing is dropped silently.
func TestKubebuilderProjectEveryField(t *testing.T) {
	rep := &portReport{}
	p, err := parseKubebuilderProject([]byte(everyField), rep)
	if err != nil {
		t.Fatal(err)
	}
	reported := map[int][]portItem{}
	for _, it := range append(append([]portItem(nil), rep.Mapped...), rep.Needs...) {
		if it.File != ProjectFile {
			t.Errorf("an item of %s: %+v", it.File, it)
		}
		reported[it.Line] = append(reported[it.Line], it)
	}
	for i, l := range strings.Split(everyField, "\n") {
		container := strings.HasSuffix(l, ":") // its fields are reported, each at its line
		if fieldLine.MatchString(l) && !container && len(reported[i+1]) == 0 {
			t.Errorf("PROJECT:%d %q is not in the report", i+1, l)
		}
	}
	needs := map[int]bool{}
	for _, it := range rep.Needs {
		needs[it.Line] = true
	}
	// What opkit cannot map, each reported as needing a hand.
	for _, l := range []string{"componentConfig: true", "- declarative.go.kubebuilder.io/v1", "  autoupdate.kubebuilder.io/v1-alpha: {}",
		"  helm.kubebuilder.io/v2-alpha:", "  sample.example.com/v1: {}",
		"    crdVersion: v1beta1", "    webhookVersion: v1beta1", "    someday: true", "  future: true", "futureField: 1"} {
		line := lineOf(t, everyField, l)
		if !needs[line] {
			t.Errorf("PROJECT:%d %q is not reported as needing a hand: %v", line, l, reported[line])
		}
	}
	if len(rep.Needs) != 10 {
		t.Errorf("%d items need a hand, want 10:\n%s", len(rep.Needs), rep.markdown("PROJECT"))
	}
	if p.Repo != "example.com/everything" || !p.Multigroup || !p.Namespaced || len(p.Resources) != 4 {
		t.Errorf("parsed %+v", p)
	}
	r := p.Resources[0]
	if w := r.Webhooks; w == nil || !w.Conversion || !w.Defaulting || !w.Validation || w.DefaultingPath != "/custom-mutate" || w.ValidationPath != "/custom-validate" || len(w.Spokes) != 1 {
		t.Errorf("resources[0].webhooks parsed as %+v", r.Webhooks)
	}
	if len(r.Controllers) != 2 || r.Controllers[1] != "memcached-backup" || r.Plural != "memcacheds" || !r.Namespaced {
		t.Errorf("resources[0] parsed as %+v", r)
	}
	if !p.Resources[1].Core || !p.Resources[2].External || p.Resources[2].Module == "" {
		t.Errorf("resources[1:3] parsed as %+v", p.Resources[1:3])
	}
}

func lineOf(t *testing.T, text, line string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if l == line {
			return i + 1
		}
	}
	t.Fatalf("no line %q", line)
	return 0
}

// A PROJECT the converter cannot read is an error that says why, and
// what to do.
func TestKubebuilderProjectRefused(t *testing.T) {
	for _, tt := range []struct{ name, project, want string }{
		{"version 2", "version: \"2\"\nrepo: x\n", `PROJECT has version "2": opkit init --from-kubebuilder reads version "3"`},
		{"no version", "repo: x\n", `PROJECT has version ""`},
		{"a list", "- a\n", "its top level is not a mapping"},
		{"not YAML", "repo: [\n", "PROJECT is not YAML"},
		{"no repo", "version: \"3\"\n", "PROJECT has no repo"},
		{"a resource without a kind", "version: \"3\"\nrepo: x\nresources:\n- group: a\n  version: v1\n", "resources[0] (line 4) has no kind or version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseKubebuilderProject([]byte(tt.project), &portReport{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// FuzzKubebuilderProject: whatever PROJECT it is given, the converter
// either refuses it with an error or reports every field it has.
func FuzzKubebuilderProject(f *testing.F) {
	f.Add(everyField)
	f.Add("version: \"3\"\nrepo: x\nresources:\n- kind: A\n  version: v1\n  webhooks: 1\n")
	f.Fuzz(func(t *testing.T, project string) {
		rep := &portReport{}
		if _, err := parseKubebuilderProject([]byte(project), rep); err != nil {
			return
		}
		if len(rep.Mapped)+len(rep.Needs) == 0 {
			t.Errorf("a PROJECT read with nothing reported:\n%s", project)
		}
	})
}

// A minor version of controller-runtime or Kubernetes that the port moves
// to is reported as the project's to take; a patch release is mapped.
func TestVersionMoves(t *testing.T) {
	before := []byte("module x\n\ngo 1.26.0\n\nrequire (\n\tsigs.k8s.io/controller-runtime v0.24.1\n\tk8s.io/api v0.37.0\n\tk8s.io/utils v0.0.0-20241104100929-3ea5e8cea738\n)\n")
	after := []byte("module x\n\ngo 1.26.0\n\nrequire (\n\tsigs.k8s.io/controller-runtime v0.25.2\n\tk8s.io/api v0.37.2\n\tk8s.io/utils v0.0.0-20251002143259-bc988d571ff4\n)\n")
	rep := &portReport{}
	versionMoves(before, after, rep)
	if len(rep.Needs) != 1 || rep.Needs[0].What != "sigs.k8s.io/controller-runtime" || !strings.Contains(rep.Needs[0].How, "moved from v0.24.1 to v0.25.2") {
		t.Errorf("needs %+v, want controller-runtime's move", rep.Needs)
	}
	if len(rep.Mapped) != 1 || rep.Mapped[0].What != "k8s.io/api" {
		t.Errorf("mapped %+v, want k8s.io/api's patch release", rep.Mapped)
	}
}

// TestLockstep: a k8s.io module the project kept at k8s.io/api's version
// moves with it (lws's k8s.io/component-helpers did not build against
// k8s.io/api 0.37 when left at 0.36), and the move is reported; one at its
// own version is left alone.
func TestLockstep(t *testing.T) {
	before := []byte("module x\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.36.3\n\tk8s.io/component-helpers v0.36.3\n\tk8s.io/component-base v0.36.3\n\tk8s.io/klog/v2 v2.130.1\n\tk8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912\n)\n")
	after := []byte("module x\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.37.2\n\tk8s.io/component-helpers v0.36.3\n\tk8s.io/component-base v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n\tk8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912\n)\n")
	if got, want := lockstep(before, after), []string{"k8s.io/component-helpers@v0.37.2"}; !slices.Equal(got, want) {
		t.Errorf("lockstep = %q, want %q", got, want)
	}
	// A staging module the project left behind k8s.io/api moves too:
	// onepassword-operator's k8s.io/kubectl v0.29 (beside k8s.io/api
	// v0.33) imports scheduling/v1alpha1, which k8s.io/api v0.37 no
	// longer has. Modules not released with Kubernetes (pseudo-versions,
	// klog/v2) stay where tidy put them.
	behind := []byte(strings.ReplaceAll(string(before), "\tk8s.io/component-base v0.36.3\n", "\tk8s.io/component-base v0.36.3\n\tk8s.io/kubectl v0.29.0\n"))
	behindAfter := []byte(strings.ReplaceAll(string(after), "\tk8s.io/component-base v0.37.2\n", "\tk8s.io/component-base v0.37.2\n\tk8s.io/kubectl v0.29.0\n"))
	if got, want := lockstep(behind, behindAfter), []string{"k8s.io/component-helpers@v0.37.2", "k8s.io/kubectl@v0.37.2"}; !slices.Equal(got, want) {
		t.Errorf("lockstep with kubectl behind = %q, want %q", got, want)
	}
	if got := lockstep(before, before); got != nil {
		t.Errorf("lockstep with k8s.io/api unmoved = %q, want nothing", got)
	}
	moved := []byte(strings.ReplaceAll(string(after), "component-helpers v0.36.3", "component-helpers v0.37.2"))
	moved = []byte(strings.ReplaceAll(string(moved), "\tk8s.io/component-base v0.37.2\n", "")) // tidied away
	rep := &portReport{}
	versionMoves(before, moved, rep)
	var needs []string
	for _, n := range rep.Needs {
		needs = append(needs, n.What)
	}
	if want := []string{"k8s.io/api", "k8s.io/component-helpers"}; !slices.Equal(needs, want) {
		t.Errorf("needs %q, want the minor moves %q", needs, want)
	}
	rep = &portReport{}
	versionMoves(behind, []byte(strings.ReplaceAll(string(moved), "\tk8s.io/klog/v2", "\tk8s.io/kubectl v0.37.2\n\tk8s.io/klog/v2")), rep)
	needs = nil
	for _, n := range rep.Needs {
		needs = append(needs, n.What)
	}
	if want := []string{"k8s.io/api", "k8s.io/component-helpers", "k8s.io/kubectl"}; !slices.Equal(needs, want) {
		t.Errorf("needs %q, want kubectl's move reported too", needs)
	}
	var dropped bool
	for _, m := range rep.Mapped {
		dropped = dropped || (m.What == "k8s.io/component-base" && strings.Contains(m.How, "no longer required"))
	}
	if !dropped {
		t.Errorf("mapped %+v, want k8s.io/component-base reported as no longer required", rep.Mapped)
	}
}
