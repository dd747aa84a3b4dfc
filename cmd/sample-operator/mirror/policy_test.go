package mirror_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

func namespace(name string, lbls map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func TestPolicyTarget(t *testing.T) {
	m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca"}}
	accept := mirror.AcceptLabel("platform")
	all := map[string]string{accept: "true"}
	terminating := namespace("leaving", all)
	terminating.Status.Phase = corev1.NamespaceTerminating
	for _, tc := range []struct {
		name   string
		policy mirror.Policy
		ns     *corev1.Namespace
		ok     bool
		why    string // a substring of the reason
	}{
		{name: "opted in to every Mirror", ns: namespace("app", all), ok: true},
		{name: "opted in to this Mirror", ns: namespace("app", map[string]string{accept: "ca"}), ok: true},
		{name: "opted in to another Mirror", ns: namespace("app", map[string]string{accept: "other"}), why: "not opted in to this Mirror"},
		{name: "opted in to another namespace's Mirrors", ns: namespace("app", map[string]string{mirror.AcceptLabel("other"): "true"}), why: "not opted in (label " + accept + "=true"},
		{name: "no labels", ns: namespace("app", nil), why: "not opted in"},
		{name: "own namespace", ns: namespace("platform", all), why: "own namespace"},
		{name: "terminating", ns: terminating, why: "terminating"},
		{name: "kube-system", ns: namespace("kube-system", all), why: "--allow-target-namespaces=kube-system"},
		{name: "kube-public", ns: namespace("kube-public", all), why: "protected"},
		{name: "operator's namespace", policy: mirror.Policy{OperatorNamespace: "ops"}, ns: namespace("ops", all), why: "protected"},
		{name: "kube-system allowed", policy: mirror.Policy{AllowNamespaces: []string{"kube-system"}}, ns: namespace("kube-system", all), ok: true},
		{name: "kube-system allowed, not opted in", policy: mirror.Policy{AllowNamespaces: []string{"kube-system"}}, ns: namespace("kube-system", nil), why: "not opted in"},
		{name: "operator's namespace allowed", policy: mirror.Policy{OperatorNamespace: "ops", AllowNamespaces: []string{"ops"}}, ns: namespace("ops", all), ok: true},
		{name: "kubernetes-dashboard is not kube-*", ns: namespace("kubernetes-dashboard", all), ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := tc.policy.Target(m, tc.ns)
			if ok != tc.ok || !strings.Contains(why, tc.why) || ok != (why == "") {
				t.Errorf("Target(%s) = %v, %q; want %v, a reason containing %q", tc.ns.Name, ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestPolicyTargets(t *testing.T) {
	m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca"}}
	in := map[string]string{mirror.AcceptLabel("platform"): "true", "team": "a"}
	var nss []*corev1.Namespace
	for _, n := range []string{"d", "b", "c", "a"} {
		nss = append(nss, namespace(n, in))
	}
	nss = append(nss,
		namespace("kube-system", in),
		namespace("platform", in),
		namespace("e", map[string]string{"team": "a"}), // not opted in
		namespace("f", map[string]string{mirror.AcceptLabel("platform"): "true", "team": "b"}), // not selected
	)
	teamA := labels.SelectorFromSet(labels.Set{"team": "a"})
	for _, tc := range []struct {
		name     string
		policy   mirror.Policy
		selector labels.Selector
		want     []string
		limited  bool
	}{
		{name: "selected and allowed, sorted", selector: teamA, want: []string{"a", "b", "c", "d"}},
		{name: "empty selector", selector: labels.Everything(), want: []string{"a", "b", "c", "d", "f"}},
		{name: "at the cap", policy: mirror.Policy{MaxTargets: 4}, selector: teamA, want: []string{"a", "b", "c", "d"}},
		{name: "over the cap", policy: mirror.Policy{MaxTargets: 2}, selector: teamA, want: []string{"a", "b"}, limited: true},
		{name: "none", selector: labels.SelectorFromSet(labels.Set{"team": "z"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, limited := tc.policy.Targets(m, tc.selector, nss)
			if diff := cmp.Diff(tc.want, got); diff != "" || limited != tc.limited {
				t.Errorf("Targets: limited = %v, want %v; (-want +got):\n%s", limited, tc.limited, diff)
			}
		})
	}
}

func TestPolicyTargetsDefaultCap(t *testing.T) {
	m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca"}}
	var nss []*corev1.Namespace
	for i := range mirror.DefaultMaxTargets + 1 {
		nss = append(nss, namespace(fmt.Sprintf("ns-%04d", i), map[string]string{mirror.AcceptLabel("platform"): "true"}))
	}
	got, limited := mirror.Policy{}.Targets(m, labels.Everything(), nss)
	if len(got) != mirror.DefaultMaxTargets || !limited || got[len(got)-1] != fmt.Sprintf("ns-%04d", mirror.DefaultMaxTargets-1) {
		t.Errorf("Targets of %d namespaces: %d, limited %v, last %q; want the first %d, limited", len(nss), len(got), limited, got[len(got)-1], mirror.DefaultMaxTargets)
	}
}

func TestPolicyCheckSource(t *testing.T) {
	secret := func(typ corev1.SecretType) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "s"}, Type: typ}
	}
	for _, tc := range []struct {
		name    string
		policy  mirror.Policy
		src     client.Object
		refused string // a substring of the error, or "" when copyable
	}{
		{name: "ConfigMap", src: &corev1.ConfigMap{}},
		{name: "Opaque", src: secret(corev1.SecretTypeOpaque)},
		{name: "untyped", src: secret("")},
		{name: "tls", src: secret(corev1.SecretTypeTLS)},
		{name: "bootstrap token", src: secret(corev1.SecretTypeBootstrapToken), refused: "--allow-secret-types=bootstrap.kubernetes.io/token"},
		{name: "service account token", src: secret(corev1.SecretTypeServiceAccountToken), refused: "kubernetes.io/service-account-token"},
		{name: "dockerconfigjson", src: secret(corev1.SecretTypeDockerConfigJson), refused: "kubernetes.io/dockerconfigjson"},
		{name: "basic-auth", src: secret(corev1.SecretTypeBasicAuth), refused: "kubernetes.io/basic-auth"},
		{name: "dockerconfigjson allowed", policy: mirror.Policy{SecretTypes: []corev1.SecretType{corev1.SecretTypeDockerConfigJson}}, src: secret(corev1.SecretTypeDockerConfigJson)},
		{name: "custom type allowed", policy: mirror.Policy{SecretTypes: []corev1.SecretType{"example.com/token"}}, src: secret("example.com/token")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CheckSource(tc.src)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("CheckSource: %v, want nil", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("CheckSource: %v, want an error containing %q", err, tc.refused)
			}
		})
	}
}

func ExamplePolicy_Target() {
	m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "ca-bundle"}}
	for _, ns := range []*corev1.Namespace{
		namespace("team-a", map[string]string{mirror.AcceptLabel("platform"): "true"}),
		namespace("team-b", map[string]string{mirror.AcceptLabel("platform"): "ca-bundle"}),
		namespace("team-c", nil),
		namespace("kube-system", map[string]string{mirror.AcceptLabel("platform"): "true"}),
	} {
		if ok, why := (mirror.Policy{}).Target(m, ns); !ok {
			fmt.Printf("%s: no, %s\n", ns.Name, why)
			continue
		}
		fmt.Printf("%s: yes\n", ns.Name)
	}
	// Output:
	// team-a: yes
	// team-b: yes
	// team-c: no, not opted in (label accept.mirrors.samples.opkit.dev/platform=true or accept.mirrors.samples.opkit.dev/platform=ca-bundle)
	// kube-system: no, protected namespace (allowed by --allow-target-namespaces=kube-system)
}
