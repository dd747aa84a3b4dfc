package mirror_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

const (
	// mirrors names v1alpha1 for kubectl, which otherwise reads the
	// preferred version, v1beta1, through conversion.
	mirrors = "mirrors.v1alpha1.samples.opkit.dev"
)

// The Mirror's webhooks, installed from config/webhook/manifests.yaml and
// driven with kubectl as a user would: the Defaulter sets an omitted kind
// or refuses on spec.source.kind, the Validator refuses a chained source
// on spec.source.name and a kind change against the old object, and its
// warnings reach kubectl.
func TestWebhooksWithKubectl(t *testing.T) {
	h := serveWebhooks(t)
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}})
	// A namespace that accepts the Mirrors' copies, so that a Mirror
	// selecting it is not warned about.
	target := env.Namespace(t)
	accept := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, mirror.AcceptLabel(h.ns))
	if err := h.cl.Patch(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}, client.RawPatch(types.MergePatchType, accept)); err != nil {
		t.Fatal(err)
	}
	matchesTarget := "{kubernetes.io/metadata.name: " + target + "}"

	t.Run("kind defaulted", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("defaulted", "", "settings", matchesTarget), "create", "-f", "-")
		if !ok {
			t.Fatalf("kubectl create refused a Mirror without kind:\n%s", out)
		}
		if strings.Contains(out, "Warning:") {
			t.Errorf("kubectl printed a warning for a selector that matches a namespace:\n%s", out)
		}
		got, _ := h.run("", "get", mirrors, "defaulted", "-o", "jsonpath={.spec.source.kind}")
		if got != v1alpha1.KindConfigMap {
			t.Errorf("spec.source.kind = %q, want %q", got, v1alpha1.KindConfigMap)
		}
	})

	t.Run("kind defaulted to Secret", func(t *testing.T) {
		h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"}})
		if out, ok := h.run(h.mirrorYAML("secret", "", "token", matchesTarget), "create", "-f", "-"); !ok {
			t.Fatalf("kubectl create refused a Mirror without kind:\n%s", out)
		}
		if got, _ := h.run("", "get", mirrors, "secret", "-o", "jsonpath={.spec.source.kind}"); got != v1alpha1.KindSecret {
			t.Errorf("spec.source.kind = %q, want %q", got, v1alpha1.KindSecret)
		}
	})

	t.Run("kind not defaulted without a source", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("absent", "", "absent", matchesTarget), "create", "-f", "-")
		want := fmt.Sprintf(`The Mirror "absent" is invalid: spec.source.kind: Required value: `+
			`neither a ConfigMap nor a Secret named "absent" exists in namespace %s: set it to ConfigMap or Secret`, h.ns)
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("kind not defaulted when ambiguous", func(t *testing.T) {
		h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "both"}})
		h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "both"}})
		out, ok := h.run(h.mirrorYAML("both", "", "both", matchesTarget), "create", "-f", "-")
		want := fmt.Sprintf(`The Mirror "both" is invalid: spec.source.kind: Required value: `+
			`both a ConfigMap and a Secret named "both" exist in namespace %s: set it to the one to copy`, h.ns)
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("chained source refused", func(t *testing.T) {
		h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copied", Labels: map[string]string{
			mirror.LabelMirrorNamespace: "elsewhere", mirror.LabelMirrorName: "upstream",
		}}})
		out, ok := h.run(h.mirrorYAML("chain", "ConfigMap", "copied", matchesTarget), "create", "-f", "-")
		want := fmt.Sprintf(`The Mirror "chain" is invalid: spec.source.name: Invalid value: "copied": `+
			`ConfigMap %s/copied is a copy made by Mirror elsewhere/upstream: copy that Mirror's source instead, since chained copies can loop`, h.ns)
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("kind change refused on update", func(t *testing.T) {
		out, ok := h.run("", "patch", mirrors, "defaulted", "--type=merge", "-p", `{"spec":{"source":{"kind":"Secret"}}}`)
		want := `The Mirror "defaulted" is invalid: spec.source.kind: Forbidden: ` +
			`cannot change from ConfigMap to Secret: delete the Mirror and create it again`
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl patch printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("source change warned on update", func(t *testing.T) {
		out, ok := h.run("", "patch", mirrors, "defaulted", "--type=merge", "-p", `{"spec":{"source":{"name":"settings-v2"}}}`)
		want := `Warning: spec.source changed from ConfigMap "settings" to ConfigMap "settings-v2": every copy will be replaced`
		if !ok || !strings.Contains(out, want) {
			t.Errorf("kubectl patch printed:\n%s\nwant success with:\n%s", out, want)
		}
	})

	t.Run("selector matching nothing warned", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("nowhere", "ConfigMap", "settings", `{no-such-label: x}`), "create", "-f", "-")
		want := "Warning: spec.namespaceSelector matches no namespace that accepts copies from namespace " + h.ns + " now: the Mirror makes no copies until one does"
		if !ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant success with:\n%s", out, want)
		}
	})

	// The same words when the selector matches namespaces that do not
	// accept copies (here default, which exists): a requester who may not
	// list namespaces learns nothing of their labels.
	t.Run("selector matching only namespaces that accept nothing warned alike", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("elsewhere", "ConfigMap", "settings", `{kubernetes.io/metadata.name: default}`), "create", "-f", "-")
		want := "Warning: spec.namespaceSelector matches no namespace that accepts copies from namespace " + h.ns + " now: the Mirror makes no copies until one does"
		if !ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant success with:\n%s", out, want)
		}
	})
}

// create creates obj in the hooked namespace.
func (h *hooked) create(obj client.Object) {
	h.t.Helper()
	obj.SetNamespace(h.ns)
	if err := h.cl.Create(h.t.Context(), obj); err != nil {
		h.t.Fatal(err)
	}
}

// With its webhooks down and failurePolicy Fail, a Mirror cannot be
// written, and the API server says why; the operator's own work on the
// Mirrors that exist goes on: copies follow their source and status is
// written, since neither is hooked.
func TestWebhooksDownReconcilesGoOn(t *testing.T) {
	w := operator(t)
	a := w.namespace(map[string]string{"team": "a"})
	src := w.configMap(w.home, "ca-bundle", map[string]string{"ca.crt": "v1"})
	m := w.mirror("ca-bundle", v1alpha1.KindConfigMap, "ca-bundle", w.selecting(map[string]string{"team": "a"}))
	w.eventually("a copy in "+a, w.hasData(a, "ca-bundle", map[string]string{"ca.crt": "v1"}))

	// The webhooks call a port nothing serves: the operator's webhook
	// server is down.
	crt, _, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, hookedLabel, w.home)
	if _, err := env.Client().CoreV1().Namespaces().Patch(t.Context(), w.home, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	refused := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: w.home},
		Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "ca-bundle"}},
	}
	// The API server loads each configuration when its informer sees it,
	// and calls the mutating webhooks before the validating ones. So the
	// validating configuration goes in first, then the mutating one, each
	// waited for until a refusal names its webhook: then both are in force
	// whatever order the API server loaded them in.
	hooks := map[string]runtime.Object{}
	for _, obj := range readManifests(t) {
		switch obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			hooks["validate.mirrors.samples.opkit.dev"] = obj
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			hooks["default.mirrors.samples.opkit.dev"] = obj
		}
	}
	for _, name := range []string{"validate.mirrors.samples.opkit.dev", "default.mirrors.samples.opkit.dev"} {
		installManifest(t, w.home, url, crt, hooks[name])
		var createErr error
		err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			createErr = w.cl.Create(ctx, refused.DeepCopy(), client.DryRunAll)
			return createErr != nil && strings.Contains(createErr.Error(), fmt.Sprintf("failed calling webhook %q", name)), nil
		})
		if err != nil {
			t.Fatalf("create of a Mirror with its webhook %s down = %v (%v), want the API server's refusal naming the webhook", name, createErr, err)
		}
		t.Logf("refused as: %v", createErr)
	}

	src.Data["ca.crt"] = "v2"
	if err := w.cl.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	w.eventually("the copy to follow the source with the webhooks down", w.hasData(a, "ca-bundle", map[string]string{"ca.crt": "v2"}))
	b := w.namespace(map[string]string{"team": "a"})
	w.eventually("a new namespace to get a copy with the webhooks down", w.hasData(b, "ca-bundle", map[string]string{"ca.crt": "v2"}))
	w.eventually("status to count the new namespace", w.ready(m, v1alpha1.ReasonSynced, 2))
}
