package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/opkit-dev/opkit/pkg/manager"

	"github.com/opkit-dev/opkit/pkg/testenv"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// colors is the defaulter and validator of ConfigMaps the tests register,
// written as a ported kubebuilder webhook would be: one type with the
// methods of both.
//
//   - data.color defaults to "blue";
//   - data.size, when set, is a whole number;
//   - data.owner cannot change once set;
//   - data.legacy is deprecated: a warning;
//   - a ConfigMap with data.protected "true" cannot be deleted.
type colors struct{}

var (
	_ webhook.Defaulter[*corev1.ConfigMap] = colors{}
	_ webhook.Validator[*corev1.ConfigMap] = colors{}
)

var configMapKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")

func (colors) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data["color"] == "" {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["color"] = "blue"
	}
	return nil
}

func (colors) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	return warn(cm), invalid(cm, validSize(cm))
}

func (colors) ValidateUpdate(_ context.Context, old, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	errs := validSize(cm)
	if o, ok := old.Data["owner"]; ok && cm.Data["owner"] != o {
		errs = append(errs, field.Invalid(field.NewPath("data", "owner"), cm.Data["owner"], "field is immutable"))
	}
	return warn(cm), invalid(cm, errs)
}

func (colors) ValidateDelete(_ context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
	if cm.Data["protected"] == "true" {
		return nil, apierrors.NewForbidden(corev1.Resource("configmaps"), cm.Name, errors.New("data.protected is \"true\": remove it first"))
	}
	return nil, nil
}

func validSize(cm *corev1.ConfigMap) field.ErrorList {
	if s, ok := cm.Data["size"]; ok {
		if _, err := strconv.Atoi(s); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("data", "size"), s, "must be a whole number")}
		}
	}
	return nil
}

func warn(cm *corev1.ConfigMap) webhook.Warnings {
	if _, ok := cm.Data["legacy"]; ok {
		return webhook.Warnings{"data.legacy is deprecated: use data.color"}
	}
	return nil
}

// invalid returns the error that gives the client each field's path and
// message, or nil.
func invalid(cm *corev1.ConfigMap, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(configMapKind.GroupKind(), cm.Name, errs)
}

// Driven through the API as a user would: the API server calls the
// manager's webhook server for ConfigMaps in a selected namespace.
func TestAdmission(t *testing.T) {
	ns := selectedNamespace(t)
	crt, key := selfSigned(t)
	wo := manager.WebhookOptions{Port: freePort(t), CertDir: certDir(t, crt, key)}
	m := newManager(t, ns, wo)
	if err := webhook.Register(m, webhook.Hooks[*corev1.ConfigMap]{Defaulter: colors{}, Validator: colors{}}); err != nil {
		t.Fatal(err)
	}
	s := start(t, m)
	poll(t, "/readyz to pass", func() bool {
		code, _ := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == 200
	})
	url := "https://127.0.0.1:" + strconv.Itoa(wo.Port)
	installWebhooks(t, ns, url, crt, webhook.MutatePath(configMapKind), webhook.ValidatePath(configMapKind))
	w := &warnings{}
	cms := clientWith(w).CoreV1().ConfigMaps(ns)
	waitForWebhooks(t, cms.Create)

	t.Run("a defaulted field appears on create", func(t *testing.T) {
		cm, err := cms.Create(t.Context(), configMap(ns, "defaulted", map[string]string{"size": "3"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["color"] != "blue" {
			t.Errorf("created ConfigMap's data.color = %q, want the default \"blue\"", cm.Data["color"])
		}
		cm, err = cms.Create(t.Context(), configMap(ns, "red", map[string]string{"color": "red"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["color"] != "red" {
			t.Errorf("created ConfigMap's data.color = %q, want \"red\" as set", cm.Data["color"])
		}
	})
	t.Run("an invalid object is refused with the field path and message", func(t *testing.T) {
		_, err := cms.Create(t.Context(), configMap(ns, "bad", map[string]string{"size": "big"}), metav1.CreateOptions{})
		wantInvalid(t, err, "data.size", `Invalid value: "big": must be a whole number`)
	})
	t.Run("an update is validated against the old object", func(t *testing.T) {
		cm, err := cms.Create(t.Context(), configMap(ns, "owned", map[string]string{"owner": "a"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["owner"] = "b"
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		wantInvalid(t, err, "data.owner", `Invalid value: "b": field is immutable`)
		cm.Data["owner"], cm.Data["size"] = "a", "4"
		if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Errorf("an update that keeps data.owner: %v", err)
		}
	})
	t.Run("warnings reach the client", func(t *testing.T) {
		w.take()
		if _, err := cms.Create(t.Context(), configMap(ns, "legacy", map[string]string{"legacy": "x"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, want := w.take(), "data.legacy is deprecated: use data.color"; !slices.Contains(got, want) {
			t.Errorf("warnings = %q, want %q among them", got, want)
		}
	})
	t.Run("a delete is validated", func(t *testing.T) {
		if _, err := cms.Create(t.Context(), configMap(ns, "protected", map[string]string{"protected": "true"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := cms.Delete(t.Context(), "protected", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `data.protected is "true": remove it first`) {
			t.Errorf("delete a protected ConfigMap = %v, want Forbidden with the validator's message", err)
		}
	})
	t.Run("kubectl shows the field path, the message and warnings", func(t *testing.T) {
		kubectlShows(t, ns)
	})
	t.Run("with the server stopped, failurePolicy Fail refuses writes in the selected namespaces only", func(t *testing.T) {
		if err := s.stop(t); err != nil {
			t.Fatalf("Start = %v", err)
		}
		_, err := cms.Create(t.Context(), configMap(ns, "refused", nil), metav1.CreateOptions{})
		// The API server says, for example: Internal error occurred:
		// failed calling webhook "default.configmaps.opkit.dev": failed
		// to call webhook: Post "https://127.0.0.1:PORT/mutate--v1-configmap?timeout=10s":
		// dial tcp 127.0.0.1:PORT: connect: connection refused
		t.Logf("the API server says: %v", err)
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "default.configmaps.opkit.dev"`) ||
			!strings.Contains(err.Error(), "connection refused") {
			t.Errorf("create with the webhook server stopped = %v, want an internal error naming the webhook and the refused connection", err)
		}
		other := env.Namespace(t)
		if _, err := env.Client().CoreV1().ConfigMaps(other).Create(t.Context(), configMap(other, "unselected", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("create in a namespace the webhooks do not select: %v", err)
		}
	})
}

// waitForWebhooks returns once the API server calls both webhooks, which it
// does a moment after their configurations are created. It writes nothing:
// its probes are dry runs.
func waitForWebhooks(t *testing.T, create func(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)) {
	t.Helper()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	poll(t, "the API server to call the webhooks", func() bool {
		cm, err := create(t.Context(), configMap("", "probe", nil), dry)
		if err != nil || cm.Data["color"] != "blue" {
			return false
		}
		_, err = create(t.Context(), configMap("", "probe", map[string]string{"size": "x"}), dry)
		return apierrors.IsInvalid(err)
	})
}

// wantInvalid fails t unless err is the API server's Invalid carrying the
// validator's cause for path, and a message that reads
// '... is invalid: <path>: <detail>'.
func wantInvalid(t *testing.T, err error, path, detail string) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		t.Fatalf("got %v, want the validator's Invalid error", err)
	}
	if want := path + ": " + detail; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want it to contain %q", err.Error(), want)
	}
	if !strings.Contains(err.Error(), `admission webhook "validate.configmaps.opkit.dev" denied the request`) {
		t.Errorf("message %q, want it to name the webhook", err.Error())
	}
	var causes []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			causes = append(causes, c.Field)
		}
	}
	if !slices.Contains(causes, path) {
		t.Errorf("causes name fields %q, want %q among them", causes, path)
	}
}

// kubectlShows checks what a user of kubectl sees: the refused field with
// its message, and the webhook's warnings.
func kubectlShows(t *testing.T, ns string) {
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := func(manifest string) (string, error) {
		cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig, "-n", ns, "create", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {%s}\n"
	out, err := run(fmt.Sprintf(cm, "kubectl-bad", "size: big"))
	if want := `data.size: Invalid value: "big": must be a whole number`; err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl create of an invalid ConfigMap: %v, output:\n%s\nwant an error containing %q", err, out, want)
	}
	out, err = run(fmt.Sprintf(cm, "kubectl-legacy", "legacy: x"))
	if want := "Warning: data.legacy is deprecated: use data.color"; err != nil || !strings.Contains(out, want) {
		t.Errorf("kubectl create with a deprecated key: %v, output:\n%s\nwant success and %q", err, out, want)
	}
}
