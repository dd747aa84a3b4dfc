package mirror_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

const (
	// mirrors names v1alpha1 for kubectl, which otherwise reads the
	// preferred version, v1beta1, through conversion.
	mirrors = "mirrors.v1alpha1.samples.opkit.dev"
)

// The Mirror's webhook, installed from config/webhook/manifests.yaml and
// driven with kubectl as a user would: the Validator refuses a selector
// that does not parse on spec.namespaceSelector and a kind change against
// the old object on spec.source.kind, and its warning reaches kubectl. A
// source that does not exist, or a selector that matches no namespace,
// is admitted without a word: the answer depends on the Mirror alone.
func TestWebhooksWithKubectl(t *testing.T) {
	h := serveWebhooks(t)

	t.Run("admitted whatever exists", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("settings", "ConfigMap", "no-such-source", `{no-such-label: x}`), "create", "-f", "-")
		if !ok || strings.Contains(out, "Warning:") {
			t.Errorf("kubectl create printed:\n%s\nwant success without a warning", out)
		}
	})

	t.Run("selector that does not parse refused", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("bad-selector", "ConfigMap", "settings", `{"not a key": x}`), "create", "-f", "-")
		want := `The Mirror "bad-selector" is invalid: spec.namespaceSelector: Invalid value: `
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("kind change refused on update", func(t *testing.T) {
		out, ok := h.run("", "patch", mirrors, "settings", "--type=merge", "-p", `{"spec":{"source":{"kind":"Secret"}}}`)
		want := `The Mirror "settings" is invalid: spec.source.kind: Forbidden: ` +
			`cannot change from ConfigMap to Secret: delete the Mirror and create it again`
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl patch printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})

	t.Run("source change warned on update", func(t *testing.T) {
		out, ok := h.run("", "patch", mirrors, "settings", "--type=merge", "-p", `{"spec":{"source":{"name":"settings-v2"}}}`)
		want := `Warning: spec.source changed from ConfigMap "no-such-source" to ConfigMap "settings-v2": every copy will be replaced`
		if !ok || !strings.Contains(out, want) {
			t.Errorf("kubectl patch printed:\n%s\nwant success with:\n%s", out, want)
		}
	})
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
	// The API server loads the configuration when its informer sees it:
	// wait until a refusal names the webhook.
	const name = "validate.mirrors.samples.opkit.dev"
	installManifests(t, w.home, url, crt)
	var createErr error
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		createErr = w.cl.Create(ctx, refused.DeepCopy(), client.DryRunAll)
		return createErr != nil && strings.Contains(createErr.Error(), fmt.Sprintf("failed calling webhook %q", name)), nil
	})
	if err != nil {
		t.Fatalf("create of a Mirror with its webhook %s down = %v (%v), want the API server's refusal naming the webhook", name, createErr, err)
	}
	t.Logf("refused as: %v", createErr)

	src.Data["ca.crt"] = "v2"
	if err := w.cl.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	w.eventually("the copy to follow the source with the webhooks down", w.hasData(a, "ca-bundle", map[string]string{"ca.crt": "v2"}))
	b := w.namespace(map[string]string{"team": "a"})
	w.eventually("a new namespace to get a copy with the webhooks down", w.hasData(b, "ca-bundle", map[string]string{"ca.crt": "v2"}))
	w.eventually("status to count the new namespace", w.ready(m, v1alpha1.ReasonSynced, 2))
}
