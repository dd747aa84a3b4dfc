package config_test

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// config/components/webhook-client-auth, added to config/default, passes
// the CA the cluster admin's ConfigMap webhook-client-ca holds to
// --webhook-client-ca, and changes nothing else of the Deployment's
// flags.
func TestWebhookClientAuthComponent(t *testing.T) {
	dir, err := os.MkdirTemp(".", "client-auth-overlay-") // kustomize takes relative paths only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	overlay := "resources:\n- ../default\ncomponents:\n- ../components/webhook-client-auth\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		t.Fatal(err)
	}
	d := one[appsv1.Deployment](t, render(t, dir), "Deployment")
	got := args(t, d)
	const caFile = "/etc/webhook-client-ca/ca.crt"
	if got["webhook-client-ca"] != caFile {
		t.Errorf("--webhook-client-ca=%q, want %s", got["webhook-client-ca"], caFile)
	}
	delete(got, "webhook-client-ca")
	want := args(t, one[appsv1.Deployment](t, render(t, "default"), "Deployment"))
	if len(got) != len(want) {
		t.Errorf("flags %v, want config/default's %v and --webhook-client-ca", got, want)
	}
	var mounted bool
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || m.MountPath == filepath.Dir(caFile) && m.Name == "webhook-client-ca"
	}
	var fromConfigMap bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		fromConfigMap = fromConfigMap || v.Name == "webhook-client-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "webhook-client-ca"
	}
	if !mounted || !fromConfigMap {
		t.Errorf("the CA is not mounted at %s from the ConfigMap webhook-client-ca: mounts %v, volumes %v",
			filepath.Dir(caFile), d.Spec.Template.Spec.Containers[0].VolumeMounts, d.Spec.Template.Spec.Volumes)
	}
}
