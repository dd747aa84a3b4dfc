// Package config_test renders the kustomizations in config/ with the kubectl
// that make envtest builds, and checks what a cluster would get:
// every object the operator needs, least-privilege RBAC, a locked-down
// Deployment with its probes wired, and samples that exercise a Mirror.
package config_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

const (
	namespace      = "mirror-system"
	serviceAccount = "mirror-controller-manager"
	image          = "ghcr.io/opkit-dev/sample-operator:latest"
	healthPort     = 8081
	metricsPort    = 8443
)

// rendered is the output of one kubectl kustomize run.
type rendered []*unstructured.Unstructured

// kubectl returns the kubectl that make envtest builds beside the control
// plane (testenv.BinaryDir).
func kubectl(t *testing.T) string {
	t.Helper()
	p, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// render runs kubectl kustomize on dir and decodes every object it prints.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kubectl(t), "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	var objs rendered
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode the output of kubectl kustomize %s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// all returns the objects of a kind, as typed objects. The conversion is
// strict, so a misspelt field in a manifest fails the test rather than
// being dropped silently by the API server.
func all[T any, PT interface {
	*T
	runtime.Object
}](t *testing.T, objs rendered, kind string) []PT {
	t.Helper()
	var out []PT
	for _, u := range objs {
		if u.GetKind() != kind {
			continue
		}
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
			t.Fatalf("%s %s: %v", kind, u.GetName(), err)
		}
		out = append(out, obj)
	}
	return out
}

// one returns the only object of a kind.
func one[T any, PT interface {
	*T
	runtime.Object
}](t *testing.T, objs rendered, kind string) PT {
	t.Helper()
	got := all[T, PT](t, objs, kind)
	if len(got) != 1 {
		t.Fatalf("got %d objects of kind %s, want 1", len(got), kind)
	}
	return got[0]
}

// find returns the object of a kind, namespace and name, or nil.
func (r rendered) find(kind, namespace, name string) *unstructured.Unstructured {
	for _, u := range r {
		if u.GetKind() == kind && u.GetNamespace() == namespace && u.GetName() == name {
			return u
		}
	}
	return nil
}

func TestDefaultHasEveryObject(t *testing.T) {
	objs := render(t, "default")
	want := []struct{ kind, namespace, name string }{
		{"Namespace", "", namespace},
		{"CustomResourceDefinition", "", "mirrors.samples.opkit.dev"},
		{"ServiceAccount", namespace, serviceAccount},
		{"ClusterRole", "", "mirror-mirror-operator"},
		{"ClusterRoleBinding", "", "mirror-operator-rolebinding"},
		{"Role", namespace, "mirror-mirror-operator"},
		{"RoleBinding", namespace, "mirror-leader-election-rolebinding"},
		{"ClusterRole", "", "mirror-metrics-reader"},
		{"Deployment", namespace, "mirror-controller-manager"},
		{"Service", namespace, "mirror-controller-manager-metrics-service"},
		{"Service", namespace, webhookService},
		{"ValidatingWebhookConfiguration", "", validatingConfig},
		{"Role", namespace, "mirror-webhook-certs"},
		{"ClusterRole", "", "mirror-webhook-certs"},
		{"RoleBinding", namespace, "mirror-webhook-certs-rolebinding"},
		{"ClusterRoleBinding", "", "mirror-webhook-certs-rolebinding"},
	}
	for _, w := range want {
		if objs.find(w.kind, w.namespace, w.name) == nil {
			t.Errorf("kubectl kustomize config/default has no %s %s/%s", w.kind, w.namespace, w.name)
		}
	}
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s %s is in namespace %q, want %q", u.GetKind(), u.GetName(), ns, namespace)
		}
	}
}

// rule is one verb on one resource (or non-resource URL) in one API group.
type rule struct{ group, resource, verb string }

// rulesOf flattens policy rules.
func rulesOf(rules []rbacv1.PolicyRule) []rule {
	var out []rule
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, res := range r.Resources {
				for _, g := range r.APIGroups {
					out = append(out, rule{g, res, v})
				}
			}
			for _, u := range r.NonResourceURLs {
				out = append(out, rule{"", u, v})
			}
		}
	}
	return out
}

func TestDefaultRBACHasNoWildcards(t *testing.T) {
	objs := render(t, "default")
	check := func(kind, name string, rules []rbacv1.PolicyRule) {
		for i, r := range rules {
			for field, vals := range map[string][]string{
				"verbs": r.Verbs, "apiGroups": r.APIGroups, "resources": r.Resources,
				"resourceNames": r.ResourceNames, "nonResourceURLs": r.NonResourceURLs,
			} {
				for _, v := range vals {
					if strings.Contains(v, "*") {
						t.Errorf("%s %s rule %d: %s holds the wildcard %q", kind, name, i, field, v)
					}
				}
			}
		}
	}
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		if r.AggregationRule != nil {
			t.Errorf("ClusterRole %s aggregates other roles; its rules cannot be checked", r.Name)
		}
		check("ClusterRole", r.Name, r.Rules)
	}
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		check("Role", r.Namespace+"/"+r.Name, r.Rules)
	}
}

func TestDefaultRBACGrantsWhatTheOperatorNeeds(t *testing.T) {
	objs := render(t, "default")
	roles := map[string][]rbacv1.PolicyRule{} // by "Kind namespace/name"
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		roles["ClusterRole /"+r.Name] = r.Rules
	}
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		roles["Role "+r.Namespace+"/"+r.Name] = r.Rules
	}
	bound := map[string]bool{}
	var cluster, local []rule
	isOperator := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	for _, b := range all[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		key := b.RoleRef.Kind + " /" + b.RoleRef.Name
		rules, ok := roles[key]
		if !ok {
			t.Errorf("ClusterRoleBinding %s refers to %s, which is not in the output", b.Name, key)
		}
		bound[key] = true
		if isOperator(b.Subjects) {
			cluster = append(cluster, rulesOf(rules)...)
		}
	}
	for _, b := range all[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		key := b.RoleRef.Kind + " " + b.Namespace + "/" + b.RoleRef.Name
		if b.RoleRef.Kind == "ClusterRole" {
			key = "ClusterRole /" + b.RoleRef.Name
		}
		rules, ok := roles[key]
		if !ok {
			t.Errorf("RoleBinding %s/%s refers to %s, which is not in the output", b.Namespace, b.Name, key)
		}
		bound[key] = true
		if isOperator(b.Subjects) && b.Namespace == namespace {
			local = append(local, rulesOf(rules)...)
		}
	}
	// Every role is bound to the operator, but the one meant for scrapers.
	for key := range roles {
		if !bound[key] && key != "ClusterRole /mirror-metrics-reader" {
			t.Errorf("%s is bound to nothing", key)
		}
	}

	need := func(rules []rule, scope, group string, resources []string, verbs ...string) {
		for _, res := range resources {
			for _, v := range verbs {
				if !slices.Contains(rules, rule{group, res, v}) {
					t.Errorf("the operator may not %s %s in API group %q %s", v, res, group, scope)
				}
			}
		}
	}
	anywhere := append(slices.Clone(cluster), local...)
	// test/deployed shows what each of these is for (docs/rbac.md).
	need(cluster, "cluster-wide", "samples.opkit.dev", []string{"mirrors"}, "list", "watch", "patch")
	need(cluster, "cluster-wide", "samples.opkit.dev", []string{"mirrors/status"}, "patch")
	need(cluster, "cluster-wide", "", []string{"configmaps", "secrets"}, "list", "watch", "delete")
	need(cluster, "cluster-wide", "admissionregistration.k8s.io", []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, "list", "watch")
	// The operator reads and writes tenants' data as each Mirror's
	// ServiceAccount, never as itself; and acts as one only where its
	// namespace's owner allows it (docs/mirror-tenancy.md). (In its own
	// namespace it keeps its webhook certificates' Secret.)
	for _, r := range cluster {
		switch {
		case (r.resource == "configmaps" || r.resource == "secrets") && r.group == "" && r.verb != "list" && r.verb != "watch" && r.verb != "delete":
			t.Errorf("the operator may %s %s itself: it reads and writes them as each Mirror's ServiceAccount", r.verb, r.resource)
		case r.verb == "impersonate":
			t.Errorf("the operator may impersonate %s by config/default: each namespace's owner grants it, by name", r.resource)
		}
	}
	need(cluster, "cluster-wide", "", []string{"namespaces"}, "list", "watch")
	need(anywhere, "in "+namespace, "events.k8s.io", []string{"events"}, "create", "patch")
	need(anywhere, "in "+namespace, "coordination.k8s.io", []string{"leases"}, "get", "create", "update")
	for _, r := range cluster {
		if r.group == "coordination.k8s.io" {
			t.Errorf("the operator may %s %s cluster-wide; leader election needs leases in %s only", r.verb, r.resource, namespace)
		}
	}
	need(cluster, "cluster-wide", "authentication.k8s.io", []string{"tokenreviews"}, "create")
	need(cluster, "cluster-wide", "authorization.k8s.io", []string{"subjectaccessreviews"}, "create")

	reader := roles["ClusterRole /mirror-metrics-reader"]
	if got, want := rulesOf(reader), []rule{{"", "/metrics", "get"}}; !slices.Equal(got, want) {
		t.Errorf("ClusterRole mirror-metrics-reader grants %v, want %v", got, want)
	}
}

func TestDefaultDeployment(t *testing.T) {
	objs := render(t, "default")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2 (one leader, one standby)", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != serviceAccount {
		t.Errorf("serviceAccountName = %q, want %q", pod.ServiceAccountName, serviceAccount)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the selector's label %s=%s is not on the pod template", k, v)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != image {
		t.Errorf("image = %q, want %q", c.Image, image)
	}
	wantCmd := []string{"/sample-operator"}
	wantArgs := []string{"--leader-elect", fmt.Sprintf("--metrics-bind-address=:%d", metricsPort), "--metrics-secure", fmt.Sprintf("--health-probe-bind-address=:%d", healthPort),
		fmt.Sprintf("--webhook-port=%d", webhookPort), "--webhook-certs=self-managed", "--identity-policy=mirror-service-account"}
	if diff := cmp.Diff(wantCmd, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	checkSecurity(t, pod.SecurityContext, c.SecurityContext)
	checkResources(t, c.Resources)
	checkProbe(t, c, "liveness", c.LivenessProbe, "/healthz")
	checkProbe(t, c, "readiness", c.ReadinessProbe, "/readyz")
}

// checkSecurity checks what the restricted Pod Security Standard asks, and a
// read-only root filesystem.
func checkSecurity(t *testing.T, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if c == nil {
		t.Fatal("the container has no securityContext")
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	if !isTrue(c.RunAsNonRoot) && (pod == nil || !isTrue(pod.RunAsNonRoot)) {
		t.Error("runAsNonRoot is not true")
	}
	if !isTrue(c.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if isTrue(c.Privileged) {
		t.Error("the container is privileged")
	}
	if c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(c.Capabilities.Add) > 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and add none", c.Capabilities)
	}
	seccomp := c.SeccompProfile
	if seccomp == nil && pod != nil {
		seccomp = pod.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile = %+v, want RuntimeDefault", seccomp)
	}
}

func checkResources(t *testing.T, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := r.Requests[name]
		lim, hasLim := r.Limits[name]
		if !hasReq || !hasLim {
			t.Errorf("%s: request set %v, limit set %v; want both", name, hasReq, hasLim)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: request %s is above limit %s", name, req.String(), lim.String())
		}
	}
}

func checkProbe(t *testing.T, c corev1.Container, kind string, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("no %s probe over HTTP GET", kind)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s probe path = %q, want %q", kind, p.HTTPGet.Path, path)
	}
	if port := containerPort(c, p.HTTPGet.Port); port != healthPort {
		t.Errorf("%s probe port %s is container port %d, want %d", kind, p.HTTPGet.Port.String(), port, healthPort)
	}
}

// containerPort resolves a port given by number or by name; 0 if unknown.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	return 0
}

func TestDefaultMetricsService(t *testing.T) {
	objs := render(t, "default")
	svc := service(t, objs, "mirror-controller-manager-metrics-service")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	if len(svc.Spec.Selector) == 0 {
		t.Fatal("the metrics Service selects no pods")
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the operator's pods do not carry", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("the Service has %d ports, want 1", len(svc.Spec.Ports))
	}
	p := svc.Spec.Ports[0]
	if p.Name != "https" || p.Port != metricsPort {
		t.Errorf("the Service's port is %s %d, want https %d", p.Name, p.Port, metricsPort)
	}
	if got := containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort); got != metricsPort {
		t.Errorf("the Service's targetPort %s is container port %d, want %d", p.TargetPort.String(), got, metricsPort)
	}
}

func TestSamples(t *testing.T) {
	objs := render(t, "samples")
	for _, w := range []struct{ kind, namespace, name string }{
		{"Namespace", "", "platform"},
		{"ConfigMap", "platform", "ca-bundle"},
		{"Mirror", "platform", "ca-bundle"},
	} {
		if objs.find(w.kind, w.namespace, w.name) == nil {
			t.Errorf("kubectl kustomize config/samples has no %s %s/%s", w.kind, w.namespace, w.name)
		}
	}
	m := objs.find("Mirror", "platform", "ca-bundle")
	if m == nil {
		t.FailNow()
	}
	if m.GetAPIVersion() != "samples.opkit.dev/v1alpha1" {
		t.Errorf("the Mirror's apiVersion = %q, want samples.opkit.dev/v1alpha1", m.GetAPIVersion())
	}
	wantSpec := map[string]any{
		"source":            map[string]any{"kind": "ConfigMap", "name": "ca-bundle"},
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}},
	}
	if diff := cmp.Diff(wantSpec, m.Object["spec"]); diff != "" {
		t.Errorf("the Mirror's spec (-want +got):\n%s", diff)
	}
	var matching []string
	for _, ns := range all[corev1.Namespace](t, objs, "Namespace") {
		if ns.Labels["team"] == "a" && ns.Labels[mirror.AcceptLabel("platform")] == "true" {
			matching = append(matching, ns.Name)
		}
	}
	if len(matching) < 2 {
		t.Errorf("namespaces labelled team=a that accept platform's Mirrors (%s=true): %v; want at least two for the Mirror to copy into", mirror.AcceptLabel("platform"), matching)
	}
}
