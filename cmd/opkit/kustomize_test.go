package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// testKustomize renders the project's config/default with kubectl, as a
// user deploys it, and checks the webhooks' wiring: the webhook
// configurations and the CRD's conversion call the prefixed Service in the
// operator's namespace, the Deployment serves with self-managed
// certificates, and their RBAC names the rendered objects. The Deployment
// runs the image config/manager names, and each kind has its editor and
// viewer roles.
func testKustomize(t *testing.T, dir string) {
	out, err := exec.CommandContext(t.Context(), kubectlPath(t), "kustomize", filepath.Join(dir, "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	objs := parseObjects(t, out)
	if got := managerImage(t, objs); got != "acme-operator:latest" {
		t.Errorf("config/default's Deployment runs %s, want config/manager's acme-operator:latest", got)
	}
	checkRoles(t, objs)
	get := func(key string) *unstructured.Unstructured {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("config/default renders no %s", key)
		}
		return o
	}
	const service, ns = "acme-operator-webhook-service", "acme-operator-system"
	for _, key := range []string{"MutatingWebhookConfiguration/acme-operator-mutating-webhook-configuration", "ValidatingWebhookConfiguration/acme-operator-validating-webhook-configuration"} {
		hooks, _, _ := unstructured.NestedSlice(get(key).Object, "webhooks")
		for _, h := range hooks {
			svc, _, _ := unstructured.NestedStringMap(h.(map[string]any), "clientConfig", "service")
			if svc["name"] != service || svc["namespace"] != ns {
				t.Errorf("%s calls %v, want %s/%s", key, svc, ns, service)
			}
		}
	}
	crd := get("CustomResourceDefinition/frigates.ship.acme.example")
	if svc, _, _ := unstructured.NestedStringMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service"); svc["name"] != service || svc["namespace"] != ns || svc["path"] != "/convert" {
		t.Errorf("the Frigate CRD converts through %v, want %s/%s /convert", svc, ns, service)
	}
	containers, _, _ := unstructured.NestedSlice(get("Deployment/acme-operator-controller-manager").Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, want := range []string{"--webhook-port=9443", "--webhook-certs=self-managed"} {
		if !slices.Contains(args, want) {
			t.Errorf("the manager's args %q lack %s", args, want)
		}
	}
	rules, _, _ := unstructured.NestedSlice(get("ClusterRole/acme-operator-webhook-certs").Object, "rules")
	var names []string
	for _, r := range rules {
		n, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
		names = append(names, n...)
	}
	for _, want := range []string{"acme-operator-mutating-webhook-configuration", "acme-operator-validating-webhook-configuration", "frigates.ship.acme.example"} {
		if !slices.Contains(names, want) {
			t.Errorf("the certificates' ClusterRole names %q, not %s", names, want)
		}
	}
}

// kubectlPath is the kubectl of the shared control plane.
func kubectlPath(t *testing.T) string {
	t.Helper()
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	return kubectl
}
