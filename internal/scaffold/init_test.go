package scaffold

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

func TestInitRejects(t *testing.T) {
	good := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0"}
	tests := []struct {
		name    string
		change  func(*InitOptions)
		prepare func(t *testing.T, dir string)
		input   string // the InputError's Input, or "" for another error
		want    []string
		is      error
	}{
		{name: "module with a space", change: func(o *InitOptions) { o.Module = "example.com/acme operator" }, input: "--module", want: []string{`"example.com/acme operator"`, "Go module path"}},
		{name: "module with an upper-case dot path", change: func(o *InitOptions) { o.Module = "-example.com/acme" }, input: "--module", want: []string{"--module"}},
		{name: "domain not a subdomain", change: func(o *InitOptions) { o.Domain = "Example_COM" }, input: "--domain", want: []string{`"Example_COM"`, "DNS subdomain"}},
		{name: "name not a label", change: func(o *InitOptions) { o.Name = "acme.operator" }, input: "--name", want: []string{`"acme.operator"`, "DNS label"}},
		{name: "name from a module that is not a label", change: func(o *InitOptions) { o.Module = "example.com/Acme" }, input: "--name", want: []string{`"Acme"`}},
		{name: "devel build without a replace", change: func(o *InitOptions) { o.OpkitVersion = DevelVersion }, want: []string{"--opkit-vendor <path to an opkit checkout>", "--opkit-replace <path to an opkit checkout>", "released opkit"}},
		{name: "vendor that is no opkit checkout", change: func(o *InitOptions) { o.OpkitVendor = os.TempDir() }, input: "--opkit-vendor", want: []string{"module github.com/opkit-dev/opkit"}},
		{name: "vendor and replace", change: func(o *InitOptions) { o.OpkitVendor, o.OpkitReplace = "../..", "../.." }, input: "--opkit-vendor", want: []string{"not both"}},
		{name: "dirty checkout build without a replace", change: func(o *InitOptions) { o.OpkitVersion = "v0.1.1-0.20261123081200-827057e1a2b3+dirty" }, want: []string{"--opkit-replace", "+dirty"}},
		{name: "replace that is no opkit checkout", change: func(o *InitOptions) { o.OpkitReplace = os.TempDir() }, input: "--opkit-replace", want: []string{"module github.com/opkit-dev/opkit"}},
		{
			name:    "directory not empty",
			prepare: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "notes.txt"), "mine") },
			want:    []string{"notes.txt", "empty directory"},
			is:      ErrDirNotEmpty,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			opts := good
			if tt.change != nil {
				tt.change(&opts)
			}
			before := tree(t, dir)
			err := Init(t.Context(), dir, opts)
			checkError(t, err, tt.input, tt.is, tt.want)
			checkUnchanged(t, dir, before)
		})
	}
}

// checkError checks that err is an InputError for input (if input is not
// ""), wraps is (if not nil) and says every want.
func checkError(t *testing.T, err error, input string, is error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var ie *InputError
	if input != "" && (!errors.As(err, &ie) || ie.Input != input) {
		t.Errorf("error %q is not an InputError for %s", err, input)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %q does not wrap %q", err, is)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInitRollsBack makes go mod tidy fail for real (an opkit version the
// module cache lacks, with the proxy off): init must leave the directory as
// it found it, or not there if it was not.
func TestInitRollsBack(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.99.0"}

	t.Run("git-only directory", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
		before := tree(t, dir)
		err := Init(t.Context(), dir, opts)
		checkError(t, err, "", nil, []string{"go mod tidy", "left as it was", "v0.99.0"})
		checkUnchanged(t, dir, before)
	})
	t.Run("new directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "acme")
		err := Init(t.Context(), dir, opts)
		checkError(t, err, "", nil, []string{"go mod tidy"})
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed init: %v", dir, err)
		}
	})
}

// TestToolsPinnedAsOpkits: a project builds controller-gen and staticcheck
// at the versions that generate opkit's own files.
// So does promtool, at opkit's version.
func TestToolsPinnedAsOpkits(t *testing.T) {
	for _, name := range toolsFiles {
		file := toolsPath(name)
		want, err := os.ReadFile(filepath.Join(opkitRoot(t), "hack", "tools", file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := toolsFile(templates, name, "example.com/acme")
		if err != nil {
			t.Fatal(err)
		}
		w := string(want)
		if strings.HasSuffix(name, "go.mod") {
			w = strings.Replace(w, "module github.com/opkit-dev/opkit/hack/tools", "module example.com/acme/hack/tools", 1)
			w = w[strings.Index(w, "\nmodule ")+1:] // opkit's comment is replaced
		}
		if !strings.HasSuffix(string(got), w) {
			t.Errorf("the project's hack/tools/%s differs from opkit's: copy hack/tools/%s to internal/scaffold/templates/tools/%s.txt", file, file, name)
		}
	}
}

// TestMonitoringIsOpkits: config/prometheus holds opkit's alert rules,
// their tests and its dashboard, but for the comment opening each.
func TestMonitoringIsOpkits(t *testing.T) {
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0"}
	opts.defaults()
	fs, err := initFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range monitoringFiles {
		b, err := os.ReadFile(filepath.Join(opkitRoot(t), "config", "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		want := withoutLeadingComment(strings.ReplaceAll(string(b), "mirror-operator", "acme-operator"))
		if got := string(fs[prometheusDir+"/"+f]); !strings.HasSuffix(got, want) {
			t.Errorf("%s/%s differs from opkit's config/monitoring/%s: copy it to internal/scaffold/templates/monitoring/%s", prometheusDir, f, f, f)
		}
	}
	if !strings.Contains(string(fs["config/default/kustomization.yaml"]), "#components:\n#- ../prometheus\n") {
		t.Errorf("config/default does not offer config/prometheus, commented out:\n%s", fs["config/default/kustomization.yaml"])
	}
}

// TestManagerIsOpkits: the project's Deployment is as hardened as opkit's
// sample's: the same manifest but for the names.
func TestManagerIsOpkits(t *testing.T) {
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0"}
	opts.defaults()
	fs, err := initFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(opkitRoot(t), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body := func(s string) string { // without the header comment
		return s[strings.Index(s, "apiVersion:"):]
	}
	// The sample serves webhooks; a new project has none until "opkit create
	// webhook" adds them.
	withoutWebhooks := strings.NewReplacer(sampleWebhookParts...).Replace(body(string(want)))
	// The Mirror's own flag: the policy that pins its ServiceAccount.
	withoutWebhooks = strings.Replace(withoutWebhooks, "        - --identity-policy=mirror-service-account\n", "", 1)
	// The sample's memory limit is measured for the sample (its comment
	// says how); a new project starts from 128Mi and measures its own.
	w := strings.NewReplacer("mirror-operator", "acme-operator", "image: operator:latest", "image: controller:latest", "- /sample-operator", "- /manager",
		"memory: 160Mi", "memory: 128Mi").Replace(withoutWebhooks)
	w = withoutComments(w)
	if got := withoutComments(body(string(fs["config/manager/manager.yaml"]))); got != w {
		t.Errorf("config/manager/manager.yaml differs from opkit's:\n%s\nwant:\n%s", got, w)
	}
}

// withoutComments returns s without its comment lines.
func withoutComments(s string) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasPrefix(strings.TrimSpace(l), "#")
	}), "")
}

// sampleWebhookParts pairs each part of the sample's Deployment that serves
// its webhooks with "", for a strings.Replacer.
var sampleWebhookParts = []string{
	"      volumes:\n      - name: webhook-certs\n        emptyDir: {}\n", "",
	"        - --webhook-port=9443\n        - --webhook-certs=self-managed\n", "",
	"        - name: webhook-server\n          containerPort: 9443\n          protocol: TCP\n", "",
	`        # The webhook server's certificate, tls.crt and tls.key, in the
        # default --webhook-cert-dir. The root filesystem is read-only: with
        # self-managed certificates the operator writes them into this
        # emptyDir; config/components/cert-manager mounts its Secret here
        # instead.
        volumeMounts:
        - name: webhook-certs
          mountPath: /tmp/k8s-webhook-server/serving-certs
`, "",
}

func TestInitFiles(t *testing.T) {
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0"}
	opts.defaults()
	fs, err := initFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range fs {
		s := string(b)
		// ${{ is a GitHub Actions expression, not a template's; the alert
		// rules' {{ $labels.job }} are Prometheus's templates.
		unrendered := strings.Contains(strings.ReplaceAll(s, "${{", ""), "{{") && !strings.HasPrefix(path, prometheusDir+"/")
		if strings.Contains(s, "<no value>") || unrendered {
			t.Errorf("%s holds an unrendered template field", path)
		}
		first, _, _ := strings.Cut(s, "\n")
		owned := strings.Contains(first, "Code generated by opkit") && strings.HasSuffix(first, "DO NOT EDIT.")
		yours := strings.Contains(first, "Scaffolded by opkit; yours to edit")
		switch {
		case path == "go.mod" || strings.HasSuffix(path, "go.sum") || path == "config/crd/bases/.gitkeep" || path == "config/rbac/role.yaml" || strings.HasSuffix(path, ".json"):
			// go's, controller-gen's and JSON's formats: no header.
		case owned == yours:
			t.Errorf("%s: its first line %q says neither or both of 'DO NOT EDIT' and 'yours to edit'", path, first)
		}
	}
	gomod := string(fs["go.mod"])
	if !strings.Contains(gomod, "require github.com/opkit-dev/opkit v0.1.0\n") || !strings.Contains(gomod, "require github.com/opkit-dev/opkit/hack/image v0.1.0\n") || strings.Contains(gomod, "replace") {
		t.Errorf("go.mod does not require opkit v0.1.0 and its image builder alone:\n%s", gomod)
	}
	if !strings.Contains(string(fs["Makefile"]), "include opkit.mk") || !strings.Contains(string(fs[".github/workflows/test.yml"]), "go-version-file: go.mod") {
		t.Error("the project has no Makefile including opkit.mk, or no CI workflow setting up Go from go.mod")
	}
	p := &Project{}
	if err := yaml.UnmarshalStrict(fs[ProjectFile], p); err != nil || p.Name != "acme-operator" || p.Domain != "example.com" || p.Layout != Layout {
		t.Errorf("PROJECT = %+v, %v", p, err)
	}
}

// TestNewProjectRenders renders a new project's kustomizations with
// kubectl, as test/e2e and kubectl apply -k config/samples do (make
// deploy and build-installer with kustomize) before any create api: kustomize refuses a
// kustomization with nothing in it, and config/crd's and config/samples'
// list nothing yet.
func TestNewProjectRenders(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs kubectl, which make envtest builds")
	}
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	dir := newProject(t)
	for _, k := range []string{"config/default", "config/crd", "config/samples"} {
		out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			t.Errorf("kubectl kustomize %s of a new project: %v\n%s", k, err, out)
		}
	}
}

// TestInsertStartsAnEmptyList: the first item added to a YAML list that
// starts empty ("resources: []") turns it into a block list; later ones add
// to it.
func TestInsertStartsAnEmptyList(t *testing.T) {
	const marker = "# +opkit:scaffold:crds"
	in := "# The CRDs.\nresources: []\n# +opkit:scaffold:crds\n"
	one, err := insertAt("config/crd/kustomization.yaml", []byte(in), marker, "- bases/a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	two, err := insertAt("config/crd/kustomization.yaml", one, marker, "- bases/b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Resources []string }
	if err := yaml.UnmarshalStrict(two, &got); err != nil {
		t.Fatalf("the list after two inserts is not YAML: %v\n%s", err, two)
	}
	if want := []string{"bases/a.yaml", "bases/b.yaml"}; !slices.Equal(got.Resources, want) {
		t.Errorf("resources = %q, want %q:\n%s", got.Resources, want, two)
	}
}

// make help lists every target a new project's makefiles document with
// "## ", test-e2e among them: the pattern must allow digits.
func TestNewProjectHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	dir := newProject(t)
	out, err := exec.CommandContext(t.Context(), "make", "-s", "-C", dir, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	documented := regexp.MustCompile(`(?m)^([a-zA-Z0-9_.-]+):.*## `)
	var targets []string
	for _, f := range []string{"Makefile", "opkit.mk"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range documented.FindAllStringSubmatch(string(b), -1) {
			targets = append(targets, m[1])
		}
	}
	if !slices.Contains(targets, "test-e2e") {
		t.Fatalf("found no documented test-e2e target among %v", targets)
	}
	listed := regexp.MustCompile(`(?m)^  (\S+)`)
	var got []string
	for _, m := range listed.FindAllStringSubmatch(string(out), -1) {
		got = append(got, m[1])
	}
	for _, target := range targets {
		if !slices.Contains(got, target) {
			t.Errorf("make help does not list %s:\n%s", target, out)
		}
	}
}

// What make builds and writes stays out of git: bin/, and dist/, where
// make build-installer writes install.yaml.
func TestNewProjectIgnoresBuildOutput(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	dir := newProject(t)
	if out, err := exec.CommandContext(t.Context(), "git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, p := range []string{"bin/acme-operator", "dist/install.yaml"} {
		if out, err := exec.CommandContext(t.Context(), "git", "-C", dir, "check-ignore", "-q", p).CombinedOutput(); err != nil {
			t.Errorf("a new project's .gitignore does not ignore %s: git check-ignore: %v %s", p, err, out)
		}
	}
}

// make build-installer renders with the kustomize hack/tools/kustomize
// pins, run with go tool: no kubectl, so no control plane to build (issue
// 48: it ran make envtest's kubectl, a build of about 40 minutes on a
// fresh machine). The test has no control plane built and no kubectl on
// PATH. make install, which needs a kubectl to reach a cluster, then
// fails at once, saying how to get one, and builds nothing.
func TestInstallerNeedsNoControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds kustomize (once per build cache)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	dir := newProject(t)
	inProject(t, dir, "go", "mod", "tidy")
	// Go's build cache stays where it is: XDG_CACHE_HOME moves opkit's.
	gocache, err := exec.CommandContext(t.Context(), "go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	env := append(os.Environ(), "GOFLAGS=", "MAKEFLAGS=", "MAKELEVEL=", "KUBECTL=", "GOCACHE="+strings.TrimSpace(string(gocache)),
		"XDG_CACHE_HOME="+empty, "KUBEBUILDER_ASSETS="+empty, "PATH="+pathWithout(t, "kubectl"))
	make := func(target string) (string, error) {
		cmd := exec.CommandContext(t.Context(), "make", "-C", dir, target, "IMG=registry.example/acme:v1")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := make("build-installer"); err != nil {
		t.Fatalf("make build-installer: %v\n%s", err, out)
	}
	install, err := os.ReadFile(filepath.Join(dir, "dist/install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(install), "kind: Deployment") || !strings.Contains(string(install), "image: registry.example/acme:v1") {
		t.Errorf("dist/install.yaml has no Deployment running registry.example/acme:v1:\n%s", install)
	}
	out, err := make("install")
	if err == nil || !strings.Contains(out, "no kubectl") || !strings.Contains(out, "KUBECTL=") {
		t.Errorf("make install without a kubectl: %v, want it to fail naming KUBECTL=:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(empty, "opkit")); err == nil {
		t.Errorf("make build-installer or install built into the control plane's cache, %s", filepath.Join(empty, "opkit"))
	}
}

// make deploy applies config/default to the cluster of the kubeconfig with
// the kubectl on PATH, which a real control plane serves here; KUBECTL
// unset and no control plane cache to fall back on.
func TestDeployWithTheKubectlOnPath(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a control plane and builds kustomize")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	dir := newProject(t)
	inProject(t, dir, "go", "mod", "tidy")
	gocache, err := exec.CommandContext(t.Context(), "go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	path := filepath.Dir(kubectl) + string(filepath.ListSeparator) + pathWithout(t, "kubectl")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "MAKEFLAGS=", "MAKELEVEL=", "KUBECTL=", "GOCACHE="+strings.TrimSpace(string(gocache)),
			"XDG_CACHE_HOME="+empty, "KUBEBUILDER_ASSETS="+empty, "PATH="+path, "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("make", "deploy", "IMG=registry.example/acme:v1")
	if got := run(kubectl, "-n", "acme-operator-system", "get", "deployment", "-o", "jsonpath={.items[*].spec.template.spec.containers[*].image}"); got != "registry.example/acme:v1" {
		t.Errorf("after make deploy, the Deployment runs %q, want registry.example/acme:v1", got)
	}
	// Not make undeploy: its kubectl delete waits for the namespace to
	// go, which takes a kube-controller-manager this control plane lacks.
}

// pathWithout is a PATH that finds every program this one's does but
// name: a directory of links to them.
func pathWithout(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			link := filepath.Join(dir, e.Name())
			if e.Name() == name || e.IsDir() {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// A new project has lint, test and e2e workflows apart, as kubebuilder's
// has (issue 48); each is YAML whose every make step names a target the
// project's makefiles have.
func TestNewProjectWorkflows(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	dir := newProject(t)
	want := map[string]string{"lint.yml": "make lint-golangci", "test.yml": "make test", "test-e2e.yml": "make test-e2e"}
	for name, step := range want {
		b, err := os.ReadFile(filepath.Join(dir, ".github/workflows", name))
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Jobs map[string]struct {
				Steps []struct{ Run string }
			}
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var runs []string
		for _, job := range wf.Jobs {
			for _, s := range job.Steps {
				if s.Run != "" {
					runs = append(runs, s.Run)
				}
			}
		}
		if !slices.Contains(runs, step) {
			t.Errorf("%s runs %q, want %q among them", name, runs, step)
		}
		for _, r := range runs {
			target, ok := strings.CutPrefix(r, "make ")
			if !ok {
				continue
			}
			// -n: make knows the target, without running it.
			if out, err := exec.CommandContext(t.Context(), "make", "-n", "-C", dir, target).CombinedOutput(); err != nil {
				t.Errorf("%s runs make %s, which the project lacks: %v\n%s", name, target, err, out)
			}
		}
	}
}
