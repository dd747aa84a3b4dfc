package config_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The webhook wiring as config/default renders it. The names are the
// sample operator's flag defaults (cmd/sample-operator's
// TestWebhookFlagDefaults checks those).
const (
	webhookService   = "mirror-webhook-service"
	webhookPort      = 9443
	validatingConfig = "mirror-validating-webhook-configuration"
	crdName          = "mirrors.samples.opkit.dev"
	caSecret         = "mirror-webhook-ca"
	certDir          = "/tmp/k8s-webhook-server/serving-certs" // --webhook-cert-dir's default in the container
	injectCA         = "cert-manager.io/inject-ca-from"
)

// overlays are the two ways config/ deploys the webhooks.
var overlays = []string{"default", "cert-manager"}

// service returns the Service of a name in the operator's namespace.
func service(t *testing.T, objs rendered, name string) *corev1.Service {
	t.Helper()
	for _, s := range all[corev1.Service](t, objs, "Service") {
		if s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	t.Fatalf("no Service %s/%s", namespace, name)
	return nil
}

// args returns the manager container's flags as name → value.
func args(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[name] = value
	}
	return out
}

func TestWebhookService(t *testing.T) {
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			objs := render(t, dir)
			svc := service(t, objs, webhookService)
			d := one[appsv1.Deployment](t, objs, "Deployment")
			c := d.Spec.Template.Spec.Containers[0]
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("the webhook Service selects %s=%s, which the operator's pods do not carry", k, v)
				}
			}
			if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) != 1 {
				t.Fatalf("the webhook Service selects %v on ports %v, want pods on one port", svc.Spec.Selector, svc.Spec.Ports)
			}
			p := svc.Spec.Ports[0]
			if p.Port != 443 {
				t.Errorf("the webhook Service's port is %d, want 443 (the API server's default for a service reference)", p.Port)
			}
			if p.TargetPort.String() != "webhook-server" {
				t.Errorf("the webhook Service's targetPort is %s, want the named port webhook-server", p.TargetPort.String())
			}
			if got := containerPort(c, p.TargetPort); got != webhookPort {
				t.Errorf("targetPort %s is container port %d, want %d", p.TargetPort.String(), got, webhookPort)
			}
			if got := args(t, d)["webhook-port"]; got != fmt.Sprint(webhookPort) {
				t.Errorf("--webhook-port=%s, want %d, the port the Service sends to", got, webhookPort)
			}
		})
	}
}

// TestWebhooksCallTheService checks that every webhook configuration and
// the CRD's conversion call the webhook Service in the operator's
// namespace at the paths the operator serves.
func TestWebhooksCallTheService(t *testing.T) {
	want := func(path string) *admissionv1.ServiceReference {
		return &admissionv1.ServiceReference{Namespace: namespace, Name: webhookService, Path: &path}
	}
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			objs := render(t, dir)
			if objs.find("MutatingWebhookConfiguration", "", "mirror-mutating-webhook-configuration") != nil {
				t.Errorf("a MutatingWebhookConfiguration is rendered: the CRD defaults, and nothing mutates Mirrors")
			}
			v := one[admissionv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration")
			if v.Name != validatingConfig {
				t.Errorf("webhook configuration %s, want %s", v.Name, validatingConfig)
			}
			if len(v.Webhooks) == 0 {
				t.Fatalf("no validating webhooks")
			}
			for _, w := range v.Webhooks {
				if diff := cmp.Diff(want("/validate-samples-opkit-dev-v1alpha1-mirror"), w.ClientConfig.Service); diff != "" {
					t.Errorf("validating webhook %s calls (-want +got):\n%s", w.Name, diff)
				}
			}
			crd := one[apiextensionsv1.CustomResourceDefinition](t, objs, "CustomResourceDefinition")
			conv := crd.Spec.Conversion
			if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
				t.Fatalf("the CRD's conversion is %+v, want a webhook", conv)
			}
			path := "/convert"
			wantSvc := &apiextensionsv1.ServiceReference{Namespace: namespace, Name: webhookService, Path: &path}
			if diff := cmp.Diff(wantSvc, conv.Webhook.ClientConfig.Service); diff != "" {
				t.Errorf("the CRD's conversion webhook calls (-want +got):\n%s", diff)
			}
			if !slices.Contains(conv.Webhook.ConversionReviewVersions, "v1") {
				t.Errorf("conversionReviewVersions %v, want v1", conv.Webhook.ConversionReviewVersions)
			}
		})
	}
}

// certVolume returns the volume mounted at the certificate directory.
func certVolume(t *testing.T, d *appsv1.Deployment) corev1.Volume {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == certDir })
	if i < 0 {
		t.Fatalf("nothing is mounted at %s, the webhook server's certificate directory (the root filesystem is read-only)", certDir)
	}
	j := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 {
		t.Fatalf("the mount at %s names volume %s, which the pod has not", certDir, c.VolumeMounts[i].Name)
	}
	return d.Spec.Template.Spec.Volumes[j]
}

// TestDefaultSelfManagedCertificates checks config/default's certificates:
// the operator makes them into a writable directory, and its roles let it
// keep the CA Secret and patch the caBundles of exactly the rendered
// webhook configurations and CRD.
func TestDefaultSelfManagedCertificates(t *testing.T) {
	objs := render(t, "default")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	if got := args(t, d)["webhook-certs"]; got != "self-managed" {
		t.Errorf("--webhook-certs=%s, want self-managed", got)
	}
	if v := certVolume(t, d); v.EmptyDir == nil {
		t.Errorf("the certificate directory is volume %+v, want an emptyDir the operator writes", v)
	}
	for _, u := range objs {
		if _, ok := u.GetAnnotations()[injectCA]; ok {
			t.Errorf("%s %s has %s without cert-manager", u.GetKind(), u.GetName(), injectCA)
		}
	}
	role := objs.find("Role", namespace, "mirror-webhook-certs")
	cr := objs.find("ClusterRole", "", "mirror-webhook-certs")
	if role == nil || cr == nil {
		t.Fatal("no Role or ClusterRole mirror-webhook-certs")
	}
	var r rbacv1.Role
	var c rbacv1.ClusterRole
	fromU(t, role, &r)
	fromU(t, cr, &c)
	wantRole := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{caSecret}, Verbs: []string{"get", "update"}},
	}
	if diff := cmp.Diff(wantRole, r.Rules); diff != "" {
		t.Errorf("Role mirror-webhook-certs (-want +got):\n%s", diff)
	}
	wantCluster := []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{validatingConfig}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{crdName}, Verbs: []string{"get", "patch"}},
	}
	if diff := cmp.Diff(wantCluster, c.Rules); diff != "" {
		t.Errorf("ClusterRole mirror-webhook-certs (-want +got):\n%s", diff)
	}
	for _, w := range []struct{ kind, name string }{
		{"ValidatingWebhookConfiguration", validatingConfig},
		{"CustomResourceDefinition", crdName},
	} {
		if objs.find(w.kind, "", w.name) == nil {
			t.Errorf("the ClusterRole names %s %s, which config/default does not render", w.kind, w.name)
		}
	}
}

func fromU(t *testing.T, u *unstructured.Unstructured, obj any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// TestCertManager checks config/cert-manager: the Certificate names the
// webhook Service, its Secret is mounted where the webhook server looks,
// cainjector is pointed at it from every object with a caBundle, and the
// operator has no roles for certificates of its own.
func TestCertManager(t *testing.T) {
	objs := render(t, "cert-manager")
	cert := objs.find("Certificate", namespace, "mirror-serving-cert")
	if cert == nil {
		t.Fatalf("config/cert-manager renders no Certificate %s/mirror-serving-cert", namespace)
	}
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	wantDNS := []string{webhookService + "." + namespace + ".svc", webhookService + "." + namespace + ".svc.cluster.local"}
	if diff := cmp.Diff(wantDNS, dns); diff != "" {
		t.Errorf("the Certificate's dnsNames (-want +got):\n%s", diff)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if objs.find("Issuer", namespace, issuer) == nil {
		t.Errorf("the Certificate's issuerRef names Issuer %s/%s, which is not rendered", namespace, issuer)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	d := one[appsv1.Deployment](t, objs, "Deployment")
	if v := certVolume(t, d); v.Secret == nil || v.Secret.SecretName != secret || v.EmptyDir != nil {
		t.Errorf("the certificate directory is volume %+v, want the Certificate's Secret %s", v, secret)
	}
	if got := args(t, d)["webhook-certs"]; got != "mounted" {
		t.Errorf("--webhook-certs=%s, want mounted", got)
	}
	want := namespace + "/" + cert.GetName()
	for _, w := range []struct{ kind, name string }{
		{"ValidatingWebhookConfiguration", validatingConfig},
		{"CustomResourceDefinition", crdName},
	} {
		u := objs.find(w.kind, "", w.name)
		if u == nil {
			t.Errorf("no %s %s", w.kind, w.name)
		} else if got := u.GetAnnotations()[injectCA]; got != want {
			t.Errorf("%s %s: %s is %q, want %q", w.kind, w.name, injectCA, got, want)
		}
	}
	// Everything else is config/default's.
	key := func(u *unstructured.Unstructured) string {
		return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	var got, wantObjs []string
	for _, u := range objs {
		got = append(got, key(u))
	}
	for _, u := range render(t, "default") {
		if !strings.Contains(u.GetName(), "webhook-certs") {
			wantObjs = append(wantObjs, key(u))
		}
	}
	wantObjs = append(wantObjs, key(cert), "Issuer "+namespace+"/"+issuer)
	slices.Sort(got)
	slices.Sort(wantObjs)
	if diff := cmp.Diff(wantObjs, got); diff != "" {
		t.Errorf("config/cert-manager's objects, against config/default's less the certificate roles (-want +got):\n%s", diff)
	}
}
