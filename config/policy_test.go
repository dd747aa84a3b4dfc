package config_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The policy names the operator in CEL strings, which kustomize does not
// rewrite: they must be what config/default renders, or the policy binds
// nobody and refuses nothing.
func TestDefaultPolicyNamesTheRenderedOperator(t *testing.T) {
	objs := render(t, "default")
	policy := objs.find("ValidatingAdmissionPolicy", "", "mirror-copies-only")
	if policy == nil {
		// kustomize versions differ on whether the policy is namespaced.
		policy = objs.find("ValidatingAdmissionPolicy", namespace, "mirror-copies-only")
	}
	binding := objs.find("ValidatingAdmissionPolicyBinding", "", "mirror-copies-only")
	if binding == nil {
		binding = objs.find("ValidatingAdmissionPolicyBinding", namespace, "mirror-copies-only")
	}
	if policy == nil || binding == nil {
		t.Fatalf("kubectl kustomize config/default has no ValidatingAdmissionPolicy and Binding mirror-copies-only (policy %v, binding %v)", policy != nil, binding != nil)
	}
	if got, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName"); got != policy.GetName() {
		t.Errorf("the binding's policyName is %q, want the rendered policy's name %q", got, policy.GetName())
	}
	conds, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	var exprs []string
	for _, c := range conds {
		e, _ := c.(map[string]any)["expression"].(string)
		exprs = append(exprs, e)
	}
	joined := strings.Join(exprs, "\n")
	for _, want := range []string{
		"'system:serviceaccount:" + namespace + ":" + serviceAccount + "'",
		"request.namespace == '" + namespace + "'",
		"request.name == 'mirror-webhook-ca'", // the operator's --webhook-ca-secret default
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the policy's matchConditions lack %s:\n%s", want, joined)
		}
	}
	if objs.find("ServiceAccount", namespace, serviceAccount) == nil {
		t.Errorf("config/default renders no ServiceAccount %s/%s for the policy to name", namespace, serviceAccount)
	}
}

// The operator's --identity-policy names the binding config/policy's
// service-account policy renders as: a name that binds nothing would make
// the operator act for no Mirror.
func TestIdentityPolicyFlagNamesTheRenderedBinding(t *testing.T) {
	objs := render(t, "default")
	binding := objs.find("ValidatingAdmissionPolicyBinding", "", "mirror-service-account")
	if binding == nil {
		binding = objs.find("ValidatingAdmissionPolicyBinding", namespace, "mirror-service-account")
	}
	if binding == nil {
		t.Fatal("kubectl kustomize config/default has no ValidatingAdmissionPolicyBinding mirror-service-account")
	}
	if got, _, _ := unstructured.NestedString(binding.Object, "spec", "policyName"); got != "mirror-service-account" {
		t.Errorf("the binding's policyName is %q, want mirror-service-account", got)
	}
	d := one[appsv1.Deployment](t, objs, "Deployment")
	want := "--identity-policy=" + binding.GetName()
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, want) {
		t.Errorf("the operator's args %q lack %s", args, want)
	}
}
