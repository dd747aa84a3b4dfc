package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// The paths are those kubebuilder's markers and controller-runtime's
// builder use, so that their webhook configurations port unchanged.
func TestPaths(t *testing.T) {
	for _, tt := range []struct {
		gvk              schema.GroupVersionKind
		mutate, validate string
	}{
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), "/mutate--v1-configmap", "/validate--v1-configmap"},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), "/mutate-apps-v1-deployment", "/validate-apps-v1-deployment"},
		{schema.GroupVersionKind{Group: "samples.opkit.dev", Version: "v1alpha1", Kind: "Mirror"},
			"/mutate-samples-opkit-dev-v1alpha1-mirror", "/validate-samples-opkit-dev-v1alpha1-mirror"},
	} {
		if got := webhook.MutatePath(tt.gvk); got != tt.mutate {
			t.Errorf("MutatePath(%v) = %q, want %q", tt.gvk, got, tt.mutate)
		}
		if got := webhook.ValidatePath(tt.gvk); got != tt.validate {
			t.Errorf("ValidatePath(%v) = %q, want %q", tt.gvk, got, tt.validate)
		}
	}
}

// Register refuses what cannot work, saying why.
func TestRegisterErrors(t *testing.T) {
	ns := env.Namespace(t)
	defaulter := webhook.DefaulterFunc[*corev1.ConfigMap](func(_ context.Context, cm *corev1.ConfigMap) error { return nil })
	t.Run("no webhook server", func(t *testing.T) {
		m, err := manager.New(env.Config(), manager.Options{Metrics: manager.MetricsOptions{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		err = webhook.Register(m, webhook.Hooks[*corev1.ConfigMap]{Defaulter: defaulter})
		if !errors.Is(err, webhook.ErrNoServer) || !strings.Contains(err.Error(), "manager.Options.Webhook.Port") {
			t.Errorf("Register = %v, want ErrNoServer naming the option", err)
		}
	})
	m := newManager(t, ns, manager.WebhookOptions{})
	t.Run("no hooks", func(t *testing.T) {
		if err := webhook.Register(m, webhook.Hooks[*corev1.ConfigMap]{}); err == nil {
			t.Error("Register of empty Hooks succeeded")
		}
	})
	t.Run("twice", func(t *testing.T) {
		h := webhook.Hooks[*corev1.ConfigMap]{Defaulter: defaulter}
		if err := webhook.Register(m, h); err != nil {
			t.Fatal(err)
		}
		if err := webhook.Register(m, h); !errors.Is(err, webhook.ErrRegistered) || !strings.Contains(err.Error(), "/mutate--v1-configmap") {
			t.Errorf("second Register = %v, want ErrRegistered naming the path", err)
		}
	})
	t.Run("not in the scheme", func(t *testing.T) {
		err := webhook.Register(m, webhook.Hooks[*unknown]{Validator: webhook.ValidatorFuncs[*unknown]{}})
		if err == nil || !strings.Contains(err.Error(), "manager.Options.Scheme") {
			t.Errorf("Register of a type outside the scheme = %v, want an error naming manager.Options.Scheme", err)
		}
	})
	t.Run("not a pointer", func(t *testing.T) {
		err := webhook.Register(m, webhook.Hooks[runtime.Object]{Validator: webhook.ValidatorFuncs[runtime.Object]{}})
		if err == nil || !strings.Contains(err.Error(), "pointer to a struct") {
			t.Errorf("Register[runtime.Object] = %v, want an error asking for a pointer to a struct", err)
		}
	})
}

// unknown is a kind no scheme knows.
type unknown struct{ corev1.ConfigMap }

func (u *unknown) DeepCopyObject() runtime.Object { return &unknown{*u.ConfigMap.DeepCopy()} }
