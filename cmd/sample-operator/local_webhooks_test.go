package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// testLocalWebhooks drives the webhooks 'make run' installs, with kubectl
// as a user would: the Mirror's validator and its warning, and
// the conversion between v1alpha1 (stored) and v1beta1 both ways.
func testLocalWebhooks(t *testing.T, kubeconfig string) {
	bin, err := testenv.Kubectl()
	if err != nil {
		t.Skipf("no kubectl (make envtest builds it): %v", err)
	}
	kubectl := func(stdin string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"--kubeconfig", kubeconfig, "-n", "platform"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out.String())
		return out.String(), err
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kubectl(stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	spec := func(resource, name string) map[string]any {
		t.Helper()
		var obj struct {
			APIVersion string         `json:"apiVersion"`
			Spec       map[string]any `json:"spec"`
		}
		if err := json.Unmarshal([]byte(must("", "get", resource, name, "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		return obj.Spec
	}
	const alpha, beta = "mirrors.v1alpha1.samples.opkit.dev", "mirrors.v1beta1.samples.opkit.dev"

	t.Run("update checked against the old object", func(t *testing.T) {
		out, err := kubectl("", "patch", alpha, "ca-bundle", "--type=merge", "-p", `{"spec":{"source":{"kind":"Secret"}}}`)
		if err == nil || !strings.Contains(out, `The Mirror "ca-bundle" is invalid: spec.source.kind: Forbidden: cannot change from ConfigMap to Secret`) {
			t.Errorf("kubectl patch of the kind: %v, want the validator's refusal with its field path", err)
		}
	})
	t.Run("warning", func(t *testing.T) {
		must(`apiVersion: samples.opkit.dev/v1alpha1
kind: Mirror
metadata: {name: renamed}
spec:
  source: {kind: ConfigMap, name: ca-bundle}
  namespaceSelector: {matchLabels: {team: nobody}}
`, "create", "-f", "-")
		out := must("", "patch", alpha, "renamed", "--type=merge", "-p", `{"spec":{"source":{"name":"ca-bundle-v2"}}}`)
		if !strings.Contains(out, `Warning: spec.source changed from ConfigMap "ca-bundle" to ConfigMap "ca-bundle-v2": every copy will be replaced`) {
			t.Errorf("kubectl patch printed no warning about the changed source")
		}
	})
	t.Run("v1beta1 written, v1alpha1 read, round trip", func(t *testing.T) {
		must("", "create", "secret", "generic", "token", "--from-literal=t=1")
		written := map[string]any{
			"from":               map[string]any{"secret": map[string]any{"name": "token"}},
			"serviceAccountName": "reader",
			"to": map[string]any{"namespaceSelector": map[string]any{
				"matchLabels":      map[string]any{"team": "a"},
				"matchExpressions": []any{map[string]any{"key": "tier", "operator": "NotIn", "values": []any{"test"}}},
			}},
		}
		b, err := json.Marshal(map[string]any{"apiVersion": "samples.opkit.dev/v1beta1", "kind": "Mirror", "metadata": map[string]any{"name": "from-beta"}, "spec": written})
		if err != nil {
			t.Fatal(err)
		}
		must(string(b), "create", "-f", "-")
		want := map[string]any{
			"source":             map[string]any{"kind": "Secret", "name": "token"},
			"namespaceSelector":  written["to"].(map[string]any)["namespaceSelector"],
			"serviceAccountName": "reader",
		}
		if diff := cmp.Diff(want, spec(alpha, "from-beta")); diff != "" {
			t.Errorf("the v1beta1 Mirror read as v1alpha1 (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(written, spec(beta, "from-beta")); diff != "" {
			t.Errorf("the v1beta1 Mirror read back as v1beta1 lost something (-written +read):\n%s", diff)
		}
	})
	t.Run("v1alpha1 written, v1beta1 read and written back, round trip", func(t *testing.T) {
		before := spec(alpha, "ca-bundle")
		want := map[string]any{
			"from": map[string]any{"configMap": map[string]any{"name": "ca-bundle"}}, "to": map[string]any{"namespaceSelector": before["namespaceSelector"]},
			"serviceAccountName": v1alpha1.DefaultServiceAccountName, // the CRD's default
		}
		if diff := cmp.Diff(want, spec(beta, "ca-bundle")); diff != "" {
			t.Errorf("the sample Mirror read as v1beta1 (-want +got):\n%s", diff)
		}
		// kubectl's preferred version is v1beta1: what it shows and
		// replaces is the converted object.
		must(must("", "get", "mirror", "ca-bundle", "-o", "json"), "replace", "-f", "-")
		if diff := cmp.Diff(before, spec(alpha, "ca-bundle")); diff != "" {
			t.Errorf("v1alpha1 -> v1beta1 -> v1alpha1 changed the spec (-before +after):\n%s", diff)
		}
	})
}
