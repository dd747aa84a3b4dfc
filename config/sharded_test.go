package config_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// config/sharded is config/default with three replicas sharing the
// Mirrors: --shard-group instead of --leader-elect, each replica named by
// its pod.
func TestShardedDeployment(t *testing.T) {
	objs := render(t, "sharded")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"--shard-group=mirror-operator", "--shard-autoscale-deployment=" + d.Name, fmt.Sprintf("--metrics-bind-address=:%d", metricsPort), "--metrics-secure",
		fmt.Sprintf("--health-probe-bind-address=:%d", healthPort), fmt.Sprintf("--webhook-port=%d", webhookPort), "--webhook-certs=self-managed"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	podName := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	})
	if !podName {
		t.Errorf("env = %+v, want POD_NAME from the Downward API's metadata.name (the replica's --shard-identity)", c.Env)
	}
	checkSecurity(t, d.Spec.Template.Spec.SecurityContext, c.SecurityContext)
	checkProbe(t, c, "readiness", c.ReadinessProbe, "/readyz")
}

// The operator's service account may do to leases in its namespace what
// the manager's sharded mode does (get, list, create, update, delete)
// and no more: no watch, nothing cluster-wide; and get and update the
// scale of its own Deployment, for the autoscaler, and nothing else of it.
func TestShardedRBAC(t *testing.T) {
	objs := render(t, "sharded")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		roles[r.Namespace+"/"+r.Name] = r.Rules
	}
	var verbs, scale []string
	for _, b := range all[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		if b.RoleRef.Kind != "Role" || b.Namespace != namespace ||
			!slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == serviceAccount && s.Namespace == namespace }) {
			continue
		}
		for _, pr := range roles[b.Namespace+"/"+b.RoleRef.Name] {
			for _, r := range rulesOf([]rbacv1.PolicyRule{pr}) {
				switch {
				case r.group == "coordination.k8s.io" && r.resource == "leases" && !slices.Contains(verbs, r.verb):
					verbs = append(verbs, r.verb)
				case r.group == "apps" && r.resource == "deployments/scale":
					if !slices.Equal(pr.ResourceNames, []string{d.Name}) {
						t.Errorf("%s on deployments/scale for %v: want the operator's own Deployment %s only", r.verb, pr.ResourceNames, d.Name)
					}
					scale = append(scale, r.verb)
				case r.group == "apps":
					t.Errorf("%s on %s: the autoscaler needs deployments/scale only", r.verb, r.resource)
				}
			}
		}
	}
	slices.Sort(scale)
	if diff := cmp.Diff([]string{"get", "update"}, scale); diff != "" {
		t.Errorf("verbs on deployments/scale, for --shard-autoscale-deployment (-want +got):\n%s", diff)
	}
	slices.Sort(verbs)
	if diff := cmp.Diff([]string{"create", "delete", "get", "list", "update"}, verbs); diff != "" {
		t.Errorf("verbs on leases in %s (-want +got):\n%s", namespace, diff)
	}
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		for _, rl := range rulesOf(r.Rules) {
			if rl.group == "coordination.k8s.io" {
				t.Errorf("ClusterRole %s grants %s on %s cluster-wide; sharding needs leases in %s only", r.Name, rl.verb, rl.resource, namespace)
			}
		}
	}
}
