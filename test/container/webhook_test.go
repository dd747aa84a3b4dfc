package container

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/internal/freeport"
)

// applyWebhookTargets creates config/default's webhook configurations and
// gives the installed CRD its conversion webhook, so that the operator's
// self-managed certificates find the objects whose caBundle they keep. No
// Service network runs here, so the API server could never call the
// webhook Service: each webhook gets an objectSelector that matches
// nothing, or with failurePolicy Fail the test's Mirror would be refused.
// The CRD serves one version, so its conversion webhook is never called.
func (d deployment) applyWebhookTargets(t *testing.T, c client.Client) {
	t.Helper()
	for _, u := range d.objects {
		switch u.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			u = u.DeepCopy()
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				h.(map[string]any)["objectSelector"] = map[string]any{"matchLabels": map[string]any{"container.opkit.dev/never": "true"}}
			}
			if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(t.Context(), u); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		case "CustomResourceDefinition":
			conv, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion")
			patch := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"conversion": conv}}}
			patch.SetGroupVersionKind(u.GroupVersionKind())
			patch.SetName(u.GetName())
			raw, err := patch.MarshalJSON()
			if err == nil {
				err = c.Patch(t.Context(), patch, client.RawPatch(types.MergePatchType, raw))
			}
			if err != nil {
				t.Fatalf("give CRD %s its conversion webhook: %v", u.GetName(), err)
			}
		}
	}
}

// rebindWebhook rewrites --webhook-port to a free port, as rebind does for
// the other servers, and returns the server's address on loopback.
func rebindWebhook(t *testing.T, args []string) ([]string, string) {
	t.Helper()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "--webhook-port=") {
			out[i] = fmt.Sprintf("--webhook-port=%d", port)
		}
	}
	return out, fmt.Sprintf("127.0.0.1:%d", port)
}

// emptyDirMounts are tmpfs mounts for the container's emptyDir volumes,
// which the kubelet would make writable under a read-only root.
func emptyDirMounts(pod corev1.PodSpec, c corev1.Container) []any {
	var out []any
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				out = append(out, map[string]any{
					"destination": m.MountPath, "type": "tmpfs", "source": "tmpfs",
					"options": []string{"nosuid", "nodev", "mode=0777"},
				})
			}
		}
	}
	return out
}
