package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readFile returns a project file's content.
func readFile(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --requester-check gives the validator a requester.Checker made in the
// kind's setup, calls it on create and update, asks for the RBAC it needs,
// and tests it; a kind added after it with a plain validator has none, and
// its validator points to the flag.
func TestCreateWebhookRequesterCheck(t *testing.T) {
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true, Validation: true, RequesterCheck: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Admiral", Validation: true})
	for path, lines := range map[string][]string{
		"internal/webhook/v1/frigate_webhook.go": {
			`"github.com/opkit-dev/opkit/pkg/webhook/requester"`,
			"checker, err := requester.New(mgr.UncachedClient(), requester.Options{})",
			"Validator: FrigateValidator{Requester: checker},", "Defaulter: FrigateDefaulter{},",
		},
		"internal/webhook/v1/frigate_validator.go": {
			"// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create",
			"Requester *requester.Checker",
			"return nil, v.Requester.Check(ctx, permissionsForFrigate(obj)...)",
			"return nil, v.Requester.Check(ctx, permissionsForFrigate(newObj)...)",
			`requester.Permission{Verb: "get", Resource: "secrets", Namespace: obj.Namespace, Name: name}`,
		},
		"internal/webhook/v1/frigate_validator_test.go": {
			"func TestFrigateValidatorChecksTheRequester(t *testing.T) {", `alice := impersonate(t, "alice")`,
		},
		"internal/webhook/v1/requester_test.go":    {"func grant(", "func impersonate("},
		"internal/webhook/v1/admiral_webhook.go":   {"Validator: AdmiralValidator{},"},
		"internal/webhook/v1/admiral_validator.go": {"opkit create webhook --requester-check", "docs/security.md"},
	} {
		got := readFile(t, dir, path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	for _, path := range []string{"internal/webhook/v1/admiral_webhook.go", "internal/webhook/v1/admiral_validator.go", "internal/webhook/v1/admiral_validator_test.go"} {
		if got := readFile(t, dir, path); strings.Contains(got, "requester.") || strings.Contains(got, "impersonate") {
			t.Errorf("%s checks the requester without --requester-check:\n%s", path, got)
		}
	}
}

// The project compiles and vets with the requester check on a namespaced
// and a cluster-scoped kind: the generated validators, their tests and the
// tests' shared helpers (run by the project's make test, and by
// cmd/opkit's end-to-end test). It runs go mod tidy and make manifests, so
// it needs the module proxy or a warm module cache.
func TestRequesterCheckCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a generated project and its controller-gen")
	}
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Validation: true, RequesterCheck: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Admiral", Defaulting: true, Validation: true, RequesterCheck: true})
	for _, args := range [][]string{{"go", "mod", "tidy", "-e"}, {"make", "manifests"}, {"go", "mod", "tidy"}, {"go", "vet", "./..."}} {
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if role := readFile(t, dir, "config/rbac/role.yaml"); !strings.Contains(role, "- subjectaccessreviews") {
		t.Errorf("config/rbac/role.yaml lets the operator create no subjectaccessreviews:\n%s", role)
	}
}
