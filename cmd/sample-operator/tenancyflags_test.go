package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// The tenancy flags make the Mirror controller's Policy; the operator's
// namespace is the pod's unless --operator-namespace says otherwise.
func TestTenancyFlags(t *testing.T) {
	podNamespace := filepath.Join(t.TempDir(), "namespace")
	if err := os.WriteFile(podNamespace, []byte("mirror-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		args         []string
		podNamespace string
		want         mirror.Policy
	}{
		{name: "defaults in a pod", podNamespace: podNamespace,
			want: mirror.Policy{OperatorNamespace: "mirror-system", MaxTargets: mirror.DefaultMaxTargets}},
		{name: "defaults outside a pod", podNamespace: filepath.Join(t.TempDir(), "none"),
			want: mirror.Policy{MaxTargets: mirror.DefaultMaxTargets}},
		{name: "every flag", podNamespace: podNamespace,
			args: []string{"--allow-target-namespaces", "kube-public, ops", "--operator-namespace", "ops",
				"--allow-secret-types", "kubernetes.io/dockerconfigjson,example.com/token", "--max-targets", "20",
				"--identity-policy", "mirror-service-account", "--act-as-operator"},
			want: mirror.Policy{OperatorNamespace: "ops", AllowNamespaces: []string{"kube-public", "ops"},
				SecretTypes: []corev1.SecretType{corev1.SecretTypeDockerConfigJson, "example.com/token"}, MaxTargets: 20,
				IdentityPolicy: "mirror-service-account", ActAsOperator: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parse(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.tenancy.policy(tc.podNamespace)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadTenancyFlags(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--max-targets", "0"}, "--max-targets is 0: it must be at least 1"},
		{[]string{"--allow-target-namespaces", "Kube_System"}, `--allow-target-namespaces: "Kube_System" is not a namespace name`},
		{[]string{"--allow-secret-types", "a b"}, `--allow-secret-types: "a b" is not a Secret type`},
		{[]string{"--identity-policy", "Not A Name"}, `--identity-policy: "Not A Name" is not the name of a ValidatingAdmissionPolicyBinding`},
		{[]string{"--kubeconfig", "testdata/unreachable.kubeconfig", "--operator-namespace", "ops", "--allow-target-namespaces", "team-a"},
			`--allow-target-namespaces: team-a is not protected (only kube-* and the operator's namespace "ops" are)`},
	} {
		err := run(t.Context(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.mention)
		}
	}
}

func TestTenancyFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mirror-tenancy.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var tf tenancyFlags
	tf.register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| `--"+fl.Name+"` |") {
				row = line
			}
		}
		switch {
		case row == "":
			t.Errorf("docs/mirror-tenancy.md has no row for --%s", fl.Name)
		case fl.DefValue != "" && !strings.Contains(row, "`"+fl.DefValue+"`"):
			t.Errorf("docs/mirror-tenancy.md gives --%s a default other than %s: %s", fl.Name, fl.DefValue, row)
		}
	})
}
