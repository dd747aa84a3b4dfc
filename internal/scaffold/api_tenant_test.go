package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// --tenant-scoped gives the kind spec.serviceAccountName, a controller
// that applies what the spec asks for through WriterAs as that
// ServiceAccount, an admission policy on the kind's resource that
// config/default includes, and a sample of the consent; a kind added after
// it without the flag has none of it, and config/default keeps the policy
// when create webhook renders it again.
func TestCreateAPITenantScoped(t *testing.T) {
	dir := newProject(t)
	tenant := frigateV1
	tenant.TenantScoped = true
	next := apiNext(t, dir, tenant)
	for _, want := range []string{"config/policy/frigate_service_account.yaml", "config/samples/ship_v1_frigate_tenancy.yaml"} {
		if !strings.Contains(next, want) {
			t.Errorf("create api --tenant-scoped says next:\n%s\nwhich does not name %s", next, want)
		}
	}
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Tender", Namespaced: true, Resource: true, Controller: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Tender", Validation: true})
	for path, lines := range map[string][]string{
		"api/v1/frigate_types.go": {
			"// +kubebuilder:default=default", "// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`",
			"ServiceAccountName string `json:\"serviceAccountName,omitempty\"`", `const DefaultFrigateServiceAccountName = "default"`,
		},
		"internal/controller/frigate_controller.go": {
			`return mgr.WriterAs("frigate", manager.ServiceAccount(obj.Namespace, frigateServiceAccount(obj)))`,
			`r := NewFrigateReconciler(nil, mgr.Writer("frigate"), func(obj *shipv1.Frigate) client.Client {`,
			"if err := r.ActAs(obj).Apply(ctx, cm); err != nil {", "if !apierrors.IsForbidden(err) {",
			`r.report(ctx, obj, metav1.ConditionFalse, "Forbidden", frigateRefusal(obj, err))`,
			"err := r.Client.Status().Apply(ctx, shipv1ac.Frigate(obj.Name, obj.Namespace).WithStatus(status))",
			`// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch` + "\n",
		},
		"internal/controller/frigate_controller_unit_test.go": {`name: "the ServiceAccount may not write"`, "controller.NewFrigateReconciler(store.Lister(), client.WithFieldOwner(own, \"frigate\"), actAs)"},
		"internal/controller/frigate_controller_test.go":      {"func TestFrigateActsAsItsServiceAccount(t *testing.T) {", "grantServiceAccount(t, cl, ns, shipv1.DefaultFrigateServiceAccountName"},
		"internal/controller/tenancy_test.go":                 {"func grantServiceAccount("},
		"config/policy/kustomization.yaml":                    {"- frigate_service_account.yaml\n"},
		"config/policy/frigate_service_account.yaml": {
			"kind: ValidatingAdmissionPolicy\n", "kind: ValidatingAdmissionPolicyBinding\n",
			`- apiGroups: ["ship.example.com"]`, `resources: ["frigates"]`, "check('impersonate')", "policyName: frigate-service-account",
		},
		"config/default/kustomization.yaml":   {"- ../policy\n", "- ../webhook\n"},
		"config/samples/kustomization.yaml":   {"- ship_v1_frigate.yaml\n", "- ship_v1_frigate_tenancy.yaml\n", "- ship_v1_tender.yaml\n"},
		"config/samples/ship_v1_frigate.yaml": {"serviceAccountName: frigate\n"},
		"config/samples/ship_v1_frigate_tenancy.yaml": {
			"kind: ServiceAccount\nmetadata:\n  name: frigate\n", `verbs: ["impersonate"]`, `resourceNames: ["frigate"]`,
			"  name: acme-operator-controller-manager\n  namespace: acme-operator-system\n",
		},
		"PROJECT": {"tenantScoped: true"},
	} {
		got := readFile(t, dir, path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	for _, path := range []string{"api/v1/tender_types.go", "internal/controller/tender_controller.go", "internal/controller/tender_controller_test.go", "config/samples/ship_v1_tender.yaml"} {
		if got := readFile(t, dir, path); strings.Contains(got, "WriterAs") || strings.Contains(got, "serviceAccountName") || strings.Contains(got, "ServiceAccount") {
			t.Errorf("%s acts as a ServiceAccount without --tenant-scoped:\n%s", path, got)
		}
	}
	for _, path := range []string{"config/policy/tender_service_account.yaml", "config/samples/ship_v1_tender_tenancy.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, path)); err == nil {
			t.Errorf("create api without --tenant-scoped wrote %s", path)
		}
	}
}

func TestCreateAPITenantScopedRejects(t *testing.T) {
	for name, o := range map[string]APIOptions{
		"cluster-scoped": {Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true, TenantScoped: true},
		"built-in":       {Group: "apps", Version: "v1", Kind: "Deployment", Namespaced: true, Controller: true, TenantScoped: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := newProject(t)
			before := tree(t, dir)
			err := CreateAPI(t.Context(), dir, o)
			checkError(t, err, "--tenant-scoped", nil, []string{"namespaced kind of the project's own"})
			checkUnchanged(t, dir, before)
		})
	}
}

// The project compiles and vets with a tenant-scoped kind, and its
// generated tests pass: the unit test, and the controller's tests against
// the control plane, which act as a ServiceAccount that may apply the
// ConfigMap and as one that may not; and the operator as deployed, on
// the samples. It runs go mod tidy and make
// manifests, so it needs the module proxy or a warm module cache, and the
// control plane opkit envtest builds.
func TestTenantScopedPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and tests a generated project")
	}
	dir := newProject(t)
	tenant := frigateV1
	tenant.TenantScoped = true
	addAPI(t, dir, tenant)
	for _, args := range [][]string{
		{"go", "mod", "tidy", "-e"}, {"make", "manifests"}, {"go", "mod", "tidy"}, {"go", "vet", "./..."},
		{"go", "test", "-count=1", "./internal/controller/"},
		// As deployed, as its ServiceAccount: the sample acts under the
		// consent config/samples grants, and the API server refuses the
		// operator nothing.
		{"go", "test", "-count=1", "-run", "TestDeployed", "./test/e2e/"},
	} {
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	crd := readFile(t, dir, "config/crd/bases/ship.example.com_frigates.yaml")
	if !strings.Contains(crd, "serviceAccountName:\n                default: default\n") {
		t.Errorf("the CRD does not default spec.serviceAccountName to default:\n%s", crd)
	}
	if role := readFile(t, dir, "config/rbac/role.yaml"); strings.Contains(role, "impersonate") {
		t.Errorf("config/rbac/role.yaml lets the operator impersonate cluster-wide; each namespace's owner grants it:\n%s", role)
	}
}
