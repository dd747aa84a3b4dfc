package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// TestCreateWebhookForeign adds webhooks on two built-in kinds beside a
// kind of the project's own: apps/v1 Deployment, whose controller create
// api made, and the core group's Pod, which the project has nothing else
// of. Their Go types are k8s.io/api's, their markers name the built-in
// group and resource, and nothing of config/crd changes.
func TestCreateWebhookForeign(t *testing.T) {
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addAPI(t, dir, APIOptions{Group: "apps", Version: "v1", Kind: "Deployment", Namespaced: true, Controller: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true})
	crds := readFile(t, dir, crdKustomize)
	addWebhook(t, dir, WebhookOptions{Group: "apps", Version: "v1", Kind: "Deployment", Defaulting: true, Validation: true})
	addWebhook(t, dir, WebhookOptions{Group: "", Version: "v1", Kind: "Pod", Validation: true})

	selector := `patch=` + "`" + `{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","acme-operator-system"]}]}}` + "`"
	for path, lines := range map[string][]string{
		"internal/webhook/v1/deployment_defaulter.go": {
			"+kubebuilder:webhook:path=/mutate-apps-v1-deployment,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=mdeployment-v1.example.com,admissionReviewVersions=v1," + selector,
			`appsv1 "k8s.io/api/apps/v1"`, `DeploymentTierLabel   = "example.com/tier"`, "acme-operator-system (the patch's namespaceSelector",
		},
		"internal/webhook/v1/deployment_validator.go": {
			"+kubebuilder:webhook:path=/validate-apps-v1-deployment,mutating=false,", "name=vdeployment-v1.example.com,", selector,
			"appsv1.SchemeGroupVersion.WithKind(\"Deployment\")",
		},
		"internal/webhook/v1/deployment_webhook.go":        {"webhook.Hooks[*appsv1.Deployment]", "Defaulter: DeploymentDefaulter{},", "Validator: DeploymentValidator{},"},
		"internal/webhook/v1/deployment_defaulter_test.go": {"Spec: appsv1.DeploymentSpec{", `corev1 "k8s.io/api/core/v1"`, `Namespace: env.Namespace(t), Name: "defaulted"`},
		"internal/webhook/v1/deployment_validator_test.go": {"invalid := &appsv1.Deployment{"},
		"internal/webhook/v1/pod_validator.go": {
			`+kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create;update,versions=v1,name=vpod-v1.example.com,`,
			"corev1.SchemeGroupVersion.WithKind(\"Pod\")",
		},
		"internal/webhook/v1/pod_validator_test.go": {"invalid := &corev1.Pod{"},
		"internal/webhook/v1/frigate_defaulter.go":  {"groups=ship.example.com,", "name=mfrigate-v1.ship.example.com,admissionReviewVersions=v1\n"},
		"internal/webhook/v1/main_test.go": {
			"webhookv1.SetupFrigateWebhook(mgr),", "webhookv1.SetupDeploymentWebhook(mgr),", "webhookv1.SetupPodWebhook(mgr),",
			"shipv1.AddToScheme(scheme),",
		},
		"cmd/main.go":    {"webhookv1.SetupDeploymentWebhook(mgr)", "webhookv1.SetupPodWebhook(mgr)"},
		"cmd/webhook.go": {`"acme-operator-mutating-webhook-configuration"`, `"acme-operator-validating-webhook-configuration"`},
		"PROJECT": {
			"group: apps\n  kind: Deployment\n  namespaced: true\n  resource: false\n  version: v1\n  webhooks:\n    defaulting: true\n    validation: true",
			"controller: false\n  group: core\n  kind: Pod\n  namespaced: true\n  resource: false\n  version: v1\n  webhooks:\n    validation: true",
		},
	} {
		got := readFile(t, dir, path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	for path, absent := range map[string]string{
		"internal/webhook/v1/main_test.go":         "appsv1", // clientgoscheme has the built-in kinds
		"internal/webhook/v1/frigate_defaulter.go": "namespaceSelector",
		"config/rbac/webhook_certs_role.yaml":      "deployments",
	} {
		if got := readFile(t, dir, path); strings.Contains(got, absent) {
			t.Errorf("%s holds %q:\n%s", path, absent, got)
		}
	}
	// The API server requires a spec of these kinds.
	for path, fixture := range map[string]string{
		"internal/webhook/v1/deployment_validator_test.go": "Spec: appsv1.DeploymentSpec{",
		"internal/webhook/v1/pod_validator_test.go":        "corev1.PodSpec{Containers",
	} {
		if got := readFile(t, dir, path); strings.Count(got, fixture) != 2 {
			t.Errorf("%s creates objects without %q:\n%s", path, fixture, got)
		}
	}
	if got := readFile(t, dir, crdKustomize); got != crds {
		t.Errorf("a webhook on a built-in kind changed %s:\n%s", crdKustomize, got)
	}
}

// A built-in kind that has webhooks only gets its controller from create
// api, and keeps its webhooks.
func TestCreateAPIAfterForeignWebhook(t *testing.T) {
	dir := newProject(t)
	addWebhook(t, dir, WebhookOptions{Group: "core", Version: "v1", Kind: "Pod", Defaulting: true})
	addAPI(t, dir, APIOptions{Group: "", Version: "v1", Kind: "Pod", Namespaced: true, Controller: true})
	want := "controller: true\n  group: core\n  kind: Pod\n  namespaced: true\n  resource: false\n  version: v1\n  webhooks:\n    defaulting: true"
	if got := readFile(t, dir, ProjectFile); strings.Count(got, "kind: Pod") != 1 || !strings.Contains(got, want) {
		t.Errorf("PROJECT after create api, want one Pod holding\n%s\ngot:\n%s", want, got)
	}
	err := CreateAPI(t.Context(), dir, APIOptions{Group: "core", Version: "v1", Kind: "Pod", Controller: true})
	checkError(t, err, "", ErrAPIExists, []string{"core/v1 Pod"})
}

func TestCreateWebhookForeignRejects(t *testing.T) {
	tests := []struct {
		name    string
		opts    WebhookOptions
		prepare func(t *testing.T, dir string)
		input   string
		is      error
		want    []string
	}{
		{
			name:  "conversion",
			opts:  WebhookOptions{Group: "apps", Version: "v1", Kind: "Deployment", Conversion: true},
			input: "--conversion", want: []string{"leave out --conversion", "makes no CRD"},
		},
		{
			name:  "unknown kind",
			opts:  WebhookOptions{Group: "apps", Version: "v1", Kind: "Deploymint", Defaulting: true},
			input: "--kind", want: []string{"apps/v1 Deploymint", "neither the project nor a built-in API has a kind Deploymint", "check its spelling"},
		},
		{
			name:  "a group that does not serve the kind",
			opts:  WebhookOptions{Group: "batch", Version: "v1", Kind: "Deployment", Defaulting: true},
			input: "--group and --version", want: []string{"batch/v1 does not serve Deployment: use --group apps --version v1"},
		},
		{
			name:  "a version no API server serves any more",
			opts:  WebhookOptions{Group: "apps", Version: "v1beta1", Kind: "Deployment", Defaulting: true},
			input: "--group and --version", want: []string{"apps/v1beta1 does not serve Deployment: use --group apps --version v1"},
		},
		{
			name:  "a list",
			opts:  WebhookOptions{Group: "apps", Version: "v1", Kind: "DeploymentList", Defaulting: true},
			input: "--kind", want: []string{"DeploymentList"},
		},
		{
			name:  "the project's kind given as built-in",
			opts:  WebhookOptions{Group: "core", Version: "v1", Kind: "Frigate", Validation: true},
			input: "--group and --version", want: []string{"use --group ship --version v1 (the project's own)"},
		},
		{
			name:  "the project's group in full",
			opts:  WebhookOptions{Group: "ship.example.com", Version: "v1", Kind: "Frigate", Validation: true},
			input: "--group", want: []string{"the project's own group ship", "--group ship"},
		},
		{
			name:  "a built-in kind given in the project's group",
			opts:  WebhookOptions{Group: "ship", Version: "v1", Kind: "Deployment", Validation: true},
			input: "--kind", want: []string{"no such API type of its own", "for the Deployment there is, --group apps --version v1"},
		},
		{
			name:  "another module's custom resource",
			opts:  WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Validation: true},
			input: "--kind", want: []string{"--external-api-path", "docs/webhooks.md"},
		},
		{
			name: "the project's kind of the same name and version",
			opts: WebhookOptions{Group: "apps", Version: "v1", Kind: "Deployment", Validation: true},
			prepare: func(t *testing.T, dir string) {
				addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Deployment", Namespaced: true, Resource: true})
			},
			input: "--kind", want: []string{"ship/v1 Deployment too", "internal/webhook/v1's SetupDeploymentWebhook"},
		},
		{
			name: "defaulting twice",
			opts: WebhookOptions{Group: "", Version: "v1", Kind: "Pod", Defaulting: true},
			prepare: func(t *testing.T, dir string) {
				addWebhook(t, dir, WebhookOptions{Group: "core", Version: "v1", Kind: "Pod", Defaulting: true})
			},
			is: ErrWebhookExists, want: []string{"--defaulting", "core/v1 Pod"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newProject(t)
			addAPI(t, dir, frigateV1)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			before := tree(t, dir)
			err := CreateWebhook(t.Context(), dir, tt.opts)
			checkError(t, err, tt.input, tt.is, tt.want)
			checkUnchanged(t, dir, before)
		})
	}
}

// removed judges k8s.io/api's types by the release of testenv's control
// plane, which must be the k8s.io/api opkit builds with.
func TestRemovedJudgesByTheBuiltRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(opkitRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(testenv.DefaultVersion, "%d.%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/api" && !strings.HasPrefix(r.Mod.Version, fmt.Sprintf("v0.%d.", minor)) {
			t.Errorf("k8s.io/api is %s, but testenv.DefaultVersion is %s", r.Mod.Version, testenv.DefaultVersion)
		}
	}
}
