package deployed

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/opkit-dev/opkit/internal/freeport"
)

// The names config/default renders, which are the operator's defaults.
const (
	webhookNamespace = "mirror-system"
	webhookService   = "mirror-webhook-service"
	caSecretName     = "mirror-webhook-ca"
)

var (
	targetsOnce sync.Once
	targetsErr  error
)

// installWebhookTargets creates config/default's webhook configurations
// and gives the installed CRD its conversion webhook, once, so that the
// operator's self-managed certificates find every object they keep the
// caBundle of. The API server here has no Service network (no
// kube-proxy), so it could never call the webhook Service: each webhook
// is given an objectSelector that matches nothing, or with failurePolicy
// Fail every write of a Mirror would be refused. The CRD serves one
// version, so its conversion webhook is never called.
func installWebhookTargets(t testing.TB) {
	t.Helper()
	targetsOnce.Do(func() { targetsErr = createWebhookTargets(render(t)) })
	if targetsErr != nil {
		t.Fatal(targetsErr)
	}
}

func createWebhookTargets(d *deployment) error {
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, u := range d.webhookTargets {
		gvr := targetResource(u.GetKind())
		if u.GetKind() == "CustomResourceDefinition" {
			conv, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion")
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": conv}})
			if err == nil {
				_, err = dyn.Resource(gvr).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil {
				return fmt.Errorf("give CRD %s its conversion webhook: %w", u.GetName(), err)
			}
			continue
		}
		u = u.DeepCopy()
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			h.(map[string]any)["objectSelector"] = map[string]any{"matchLabels": map[string]any{"deployed.opkit.dev/never": "true"}}
		}
		if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
			return err
		}
		if _, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

func targetResource(kind string) schema.GroupVersionResource {
	switch kind {
	case "MutatingWebhookConfiguration":
		return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	case "ValidatingWebhookConfiguration":
		return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	}
	return schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
}

// caBundles returns the caBundle of every webhook of the targets and of
// the CRD's conversion, by "kind name[/webhook]".
func caBundles(t testing.TB) map[string][]byte {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, want := range render(t).webhookTargets {
		u, err := dyn.Resource(targetResource(want.GetKind())).Get(context.Background(), want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			b, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			out[u.GetKind()+" "+u.GetName()] = decodeBase64(t, b)
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			b, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "caBundle")
			name, _, _ := unstructured.NestedString(h.(map[string]any), "name")
			out[u.GetKind()+" "+u.GetName()+"/"+name] = decodeBase64(t, b)
		}
	}
	return out
}

func decodeBase64(t testing.TB, s string) []byte {
	t.Helper()
	var b []byte
	if err := json.Unmarshal([]byte(`"`+s+`"`), &b); err != nil {
		t.Fatalf("caBundle %q: %v", s, err)
	}
	return b
}

// freePort returns a port that was free a moment ago: the webhook port
// cannot be 0, since the API server must be told it.
func freePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebhookCertificates runs the operator as a pod (as TestInCluster
// does: it finds the CA Secret's namespace in the ServiceAccount's files)
// with config/default's webhook flags and RBAC, and checks what the
// self-managed certificates did: the CA Secret exists, every caBundle is
// its bundle, /readyz passes its webhook and certificate checks, and the
// webhook server's certificate, for the Service's DNS name, chains to the
// caBundle. The API server cannot call the webhooks here (no Service
// network): docs/webhooks.md says what is not tested.
func TestWebhookCertificates(t *testing.T) {
	d := render(t)
	id := d.apply(t, "")
	scraper := d.scraper(t)
	lease := leaseRef{namespace: id.namespace, name: "deployed-webhook"}
	w := newWorld(t, lease, scraper)
	op := startOperator(t, podConfig(t, id, token(t, id, 3600), opConfig{lease: lease.name}))
	w.run(op, steps[:1])

	code, body, err := op.ready()
	if err != nil || code != 200 || !strings.Contains(body, "[+]webhook ok") || !strings.Contains(body, "[+]webhook-certificate ok") {
		t.Errorf("/readyz: %d %v, want both webhook checks passing:\n%s", code, err, body)
	}
	s, err := env.Client().CoreV1().Secrets(webhookNamespace).Get(context.Background(), caSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CA Secret: %v", err)
	}
	if s.Type != corev1.SecretTypeTLS || len(s.Data["ca.crt"]) == 0 {
		t.Fatalf("the CA Secret is of type %s with keys %v, want kubernetes.io/tls with ca.crt", s.Type, keys(s.Data))
	}
	bundles := caBundles(t)
	if len(bundles) < 2 {
		t.Errorf("caBundles of %v, want the validating webhook configuration's and the CRD's", keys(bundles))
	}
	for where, b := range bundles {
		if !bytes.Equal(b, s.Data["ca.crt"]) {
			t.Errorf("%s: the caBundle is not the CA Secret's ca.crt", where)
		}
	}

	addr, err := op.addr("webhook")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatal("the CA Secret's ca.crt holds no PEM certificate")
	}
	// As the API server dials the Service: the name it verifies is the
	// Service's, the roots are the caBundle.
	serverName := webhookService + "." + webhookNamespace + ".svc"
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), &tls.Config{RootCAs: roots, ServerName: serverName})
	if err != nil {
		t.Fatalf("the webhook server's certificate for %s does not chain to the caBundle: %v", serverName, err)
	}
	conn.Close()
	w.run(op, steps[len(steps)-1:])
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// clearCABundles empties every caBundle the operator keeps, so that the
// next operator has to patch them.
func clearCABundles(t testing.TB) {
	t.Helper()
	installWebhookTargets(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, want := range render(t).webhookTargets {
		gvr := targetResource(want.GetKind())
		u, err := dyn.Resource(gvr).Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "CustomResourceDefinition" {
			unstructured.RemoveNestedField(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		} else {
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				delete(h.(map[string]any)["clientConfig"].(map[string]any), "caBundle")
			}
			if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dyn.Resource(gvr).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("clear the caBundles of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// TestExitsWithTheCertificatesRunning: an operator whose manager stops on
// its own (here a Lease it may not renew, with --leader-elect-exit-on-loss:
// by default it would stay up and campaign again) exits, though the rotator
// of its webhook certificates runs on a context that has not ended.
func TestExitsWithTheCertificatesRunning(t *testing.T) {
	d := render(t)
	p := permission{"coordination.k8s.io", "leases", "update", webhookNamespace, ""}
	id := d.apply(t, "exits", p)
	lease := leaseRef{namespace: id.namespace, name: "deployed-exits"}
	w := newWorld(t, lease, d.scraper(t))
	op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace, anyExit: true, exitOnLoss: true})
	w.op = op
	eventually(t, "the operator to give up the Lease it may not renew, and exit", func(*world) error {
		if op.running() {
			return errors.New("it still runs")
		}
		return nil
	}, w)
	if line, ok := op.logs.find("Webhook certificate ready"); !ok {
		t.Errorf("the operator never ran its webhook certificates: %s", line)
	}
}
