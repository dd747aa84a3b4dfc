package testenv_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// The webhooks TestMain installs (testdata/webhook, and the conversion of
// testdata/crds/gadgets.yaml) reach a manager served at env.Webhook().
func TestWebhookInstallation(t *testing.T) {
	env := testenv.SharedEnvironment()
	ns := env.Namespace(t)
	s := env.Webhook()
	if s.Host != "127.0.0.1" || s.Port == 0 || s.CertDir == "" {
		t.Fatalf("Webhook() = %+v, want 127.0.0.1, a port and a CertDir", s)
	}
	m, err := manager.New(env.Config(), manager.Options{
		Scheme:  gadgetScheme(),
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache:   cache.Options{Namespaces: []string{ns}},
		Webhook: manager.WebhookOptions{Host: s.Host, Port: s.Port, CertDir: s.CertDir},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = webhook.Register(m, webhook.Hooks[*corev1.ConfigMap]{
		Defaulter: webhook.DefaulterFunc[*corev1.ConfigMap](func(_ context.Context, cm *corev1.ConfigMap) error {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data["defaulted"] = "yes"
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); err != nil {
		t.Fatal(err)
	}
	run(t, m)
	c, err := client.New(env.Config(), client.Options{Scheme: gadgetScheme()})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("defaulting", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "selected",
			Labels: map[string]string{"testenv.opkit.dev/webhook": "default"}}}
		if err := c.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["defaulted"] != "yes" {
			t.Errorf("created ConfigMap has data %v, want defaulted=yes from the installed webhook", cm.Data)
		}
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-selected"}}
		if err := c.Create(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		if _, ok := other.Data["defaulted"]; ok {
			t.Error("the manifest's objectSelector was lost: an unlabelled ConfigMap was defaulted")
		}
	})
	t.Run("conversion", func(t *testing.T) {
		v1 := &GadgetV1{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}
		v1.Spec.Size = 3
		if err := c.Create(t.Context(), v1); err != nil {
			t.Fatal(err)
		}
		v2 := &GadgetV2{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(v1), v2); err != nil {
			t.Fatalf("get v1 Gadget as v2: %v", err)
		}
		if v2.Spec.Shape.Size != 3 {
			t.Errorf("v1 size 3 read as v2 shape.size %d", v2.Spec.Shape.Size)
		}
	})
}

// Mistakes in Options.Webhook fail Start before any process starts, saying
// what to fix.
func TestWebhookOptionsErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts testenv.WebhookOptions
		want string
	}{
		{"missing path", testenv.WebhookOptions{Paths: []string{"testdata/no-such-dir"}}, `webhook manifest path "testdata/no-such-dir" (Options.Webhook.Paths)`},
		{"webhook without a path", testenv.WebhookOptions{Paths: []string{"testdata/webhook-nopath"}}, `ValidatingWebhookConfiguration no-path, webhook "vconfigmap.testenv.opkit.dev": its clientConfig has no path`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := testenv.Start(testenv.Options{Webhook: tt.opts})
			if err == nil {
				_ = e.Stop()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start = %v, want an error saying %s", err, tt.want)
			}
		})
	}
}

// run starts m until the test ends and returns once /readyz, which
// includes the webhook server, says ready.
func run(t *testing.T, m *manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start = %v", err)
		}
	})
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		addr := m.HealthProbeAddr()
		if addr == "" {
			return false, nil
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", addr))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("waiting for the manager to be ready: %v", err)
	}
}

// Gadget's two versions (testdata/crds/gadgets.yaml), in kubebuilder's
// style: v2 is the hub, v1 converts itself.
var (
	gadgetV1 = schema.GroupVersion{Group: "testenv.opkit.dev", Version: "v1"}
	gadgetV2 = schema.GroupVersion{Group: "testenv.opkit.dev", Version: "v2"}
)

type GadgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int `json:"size"`
	} `json:"spec"`
}

type GadgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Shape struct {
			Size int `json:"size"`
		} `json:"shape"`
	} `json:"spec"`
}

func (g *GadgetV1) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (g *GadgetV2) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (*GadgetV2) Hub() {}

func (g *GadgetV1) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*GadgetV2)
	g.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec.Shape.Size = g.Spec.Size
	return nil
}

func (g *GadgetV1) ConvertFrom(hub conversion.Hub) error {
	src := hub.(*GadgetV2)
	src.ObjectMeta.DeepCopyInto(&g.ObjectMeta)
	g.Spec.Size = src.Spec.Shape.Size
	return nil
}

func gadgetScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	for gv, obj := range map[schema.GroupVersion]runtime.Object{gadgetV1: &GadgetV1{}, gadgetV2: &GadgetV2{}} {
		s.AddKnownTypeWithName(gv.WithKind("Gadget"), obj)
		metav1.AddToGroupVersion(s, gv)
	}
	return s
}
