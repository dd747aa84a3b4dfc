package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

const gadgetCRD = "gadgets.conv.webhook-test.opkit.dev"

// An object written in one version reads back in the other, through the
// manager's conversion webhook, and a round trip loses nothing; both in
// kubebuilder's style (the types' methods) and with SpokeFuncs.
func TestConversion(t *testing.T) {
	var calls atomic.Int32
	for _, tt := range []struct {
		name string
		conv webhook.Conversion[*GadgetV2]
	}{
		{"methods", webhook.Conversion[*GadgetV2]{}},
		{"functions", webhook.Conversion[*GadgetV2]{Spokes: []webhook.Spoke[*GadgetV2]{
			webhook.SpokeFuncs(
				func(_ context.Context, src *GadgetV1, dst *GadgetV2) error { calls.Add(1); return v1ToV2(src, dst) },
				func(_ context.Context, src *GadgetV2, dst *GadgetV1) error { calls.Add(1); return v2ToV1(src, dst) },
			),
		}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			logs := &lines{}
			m, url, caBundle := newGadgetManagerLogging(t, ns, funcr.New(logs.add, funcr.Options{Verbosity: 1}))
			if err := webhook.RegisterConversion(m, tt.conv); err != nil {
				t.Fatal(err)
			}
			start(t, m)
			c := gadgetClient(t)
			convertVia(t, c, ns, url, caBundle)
			testConversion(t, c, ns)
			for _, want := range []string{
				`webhook "level"=1 "msg"="Converting" "path"="/convert"`,
				`"desiredAPIVersion"="conv.webhook-test.opkit.dev/v2"`,
				`"kind"="Gadget" "namespace"="` + ns + `" "name"="from-v1"`,
				`"msg"="Conversion failed" "error"="endpoint \"nowhere\" is not host:port"`,
			} {
				if !logs.contain(want) {
					t.Errorf("no log line says %s", want)
				}
			}
		})
	}
	if calls.Load() == 0 {
		t.Error("the SpokeFuncs were never called")
	}
}

func testConversion(t *testing.T, c client.Client, ns string) {
	ctx := t.Context()
	v1 := &GadgetV1{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-v1"}}
	v1.Spec.Host, v1.Spec.Port = "example.com", 443
	if err := c.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	got := &GadgetV2{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v1), got); err != nil {
		t.Fatalf("get v1 object as v2: %v", err)
	}
	if got.Spec.Endpoint != "example.com:443" || got.Spec.TLS {
		t.Errorf("v1 %+v read as v2 %+v, want endpoint example.com:443", v1.Spec, got.Spec)
	}

	v2 := &GadgetV2{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-v2", Annotations: map[string]string{"keep": "me"}}}
	v2.Spec.Endpoint, v2.Spec.TLS = "gadget.local:8443", true
	want := v2.Spec
	if err := c.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	asV1 := &GadgetV1{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v2), asV1); err != nil {
		t.Fatalf("get v2 object as v1: %v", err)
	}
	if asV1.Spec.Host != "gadget.local" || asV1.Spec.Port != 8443 || asV1.Annotations[tlsAnnotation] != "true" {
		t.Errorf("v2 %+v read as v1 %+v with annotations %v, want host, port and the tls annotation", want, asV1.Spec, asV1.Annotations)
	}
	back := &GadgetV2{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v2), back); err != nil {
		t.Fatalf("get v2 object as v2: %v", err)
	}
	if diff := cmp.Diff(want, back.Spec); diff != "" {
		t.Errorf("round trip v2 -> v1 (stored) -> v2 changed the spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"keep": "me"}, back.Annotations); diff != "" {
		t.Errorf("round trip changed the annotations (-want +got):\n%s", diff)
	}

	bad := &GadgetV2{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}}
	bad.Spec.Endpoint = "nowhere"
	err := c.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), `conversion webhook for conv.webhook-test.opkit.dev/v2, Kind=Gadget failed: endpoint "nowhere" is not host:port`) {
		t.Errorf("create of an unconvertible v2 object = %v, want the converter's message", err)
	}
}

// newGadgetManager returns a manager with Gadget in its scheme, and the
// URL and CA bundle of its conversion webhook.
func newGadgetManager(t *testing.T, ns string) (m *manager.Manager, url string, caBundle []byte) {
	t.Helper()
	return newGadgetManagerLogging(t, ns, logr.Discard())
}

func newGadgetManagerLogging(t *testing.T, ns string, log logr.Logger) (m *manager.Manager, url string, caBundle []byte) {
	t.Helper()
	crt, key := selfSigned(t)
	port := freePort(t)
	m, err := manager.New(env.Config(), manager.Options{
		Scheme:  gadgetScheme(),
		Logger:  log,
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Cache:   cache.Options{Namespaces: []string{ns}},
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: certDir(t, crt, key)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.ConversionPath), crt
}

func gadgetClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config(), client.Options{Scheme: gadgetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// convertVia points Gadget's conversion at url, and waits until the API
// server uses it: until a new v1 object reads back as v2 with its endpoint.
func convertVia(t *testing.T, c client.Client, ns, url string, caBundle []byte) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName(gadgetCRD)
	patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig":             map[string]any{"url": url, "caBundle": caBundle},
		},
	}}}
	b, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(t.Context(), crd, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatalf("point %s at %s: %v", gadgetCRD, url, err)
	}
	probe := &GadgetV1{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
	probe.Spec.Host, probe.Spec.Port = "probe", 1
	if err := c.Create(t.Context(), probe); err != nil {
		t.Fatal(err)
	}
	// The API server swaps its converter for the CRD's new one shortly
	// after the update; until then it may call the previous test's server.
	poll(t, "the API server to convert through "+url, func() bool {
		got := &GadgetV2{}
		return c.Get(t.Context(), client.ObjectKeyFromObject(probe), got) == nil && got.Spec.Endpoint == "probe:1"
	})
}

// lines collects log lines.
type lines struct {
	mu   sync.Mutex
	list []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, prefix+" "+args)
}

func (l *lines) contain(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.list, func(line string) bool { return strings.Contains(line, s) })
}

// GadgetPlain is a v1 of Gadget that does not convert.
type GadgetPlain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *GadgetPlain) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// RegisterConversion refuses what cannot work, naming the type and what
// it lacks, and never panics.
func TestRegisterConversionErrors(t *testing.T) {
	ns := env.Namespace(t)
	t.Run("no webhook server", func(t *testing.T) {
		m, err := manager.New(env.Config(), manager.Options{Scheme: gadgetScheme(), Metrics: manager.MetricsOptions{BindAddress: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); !errors.Is(err, webhook.ErrNoServer) {
			t.Errorf("RegisterConversion = %v, want ErrNoServer", err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		m, _, _ := newGadgetManager(t, ns)
		if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); err != nil {
			t.Fatal(err)
		}
		err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{})
		if !errors.Is(err, webhook.ErrRegistered) || !strings.Contains(err.Error(), "Gadget.conv.webhook-test.opkit.dev") {
			t.Errorf("second RegisterConversion = %v, want ErrRegistered naming the kind", err)
		}
	})
	t.Run("admission and conversion share the server", func(t *testing.T) {
		m, _, _ := newGadgetManager(t, ns)
		if err := webhook.Register(m, webhook.Hooks[*GadgetV2]{Validator: webhook.ValidatorFuncs[*GadgetV2]{}}); err != nil {
			t.Fatal(err)
		}
		if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); err != nil {
			t.Errorf("RegisterConversion after Register = %v", err)
		}
	})
	for _, tt := range []struct {
		name   string
		scheme func() *runtime.Scheme
		reg    func(*manager.Manager) error
		want   []string
	}{
		{"not in the scheme", runtime.NewScheme,
			func(m *manager.Manager) error { return webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}) },
			[]string{"manager.Options.Scheme"}},
		{"one version", func() *runtime.Scheme {
			s := runtime.NewScheme()
			s.AddKnownTypeWithName(gadgetV2.WithKind("Gadget"), &GadgetV2{})
			return s
		}, func(m *manager.Manager) error { return webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}) },
			[]string{"one version", "other versions"}},
		{"hub without Hub()", gadgetScheme,
			func(m *manager.Manager) error { return webhook.RegisterConversion(m, webhook.Conversion[*GadgetV1]{}) },
			[]string{"*webhook_test.GadgetV1 (v1, the hub) has no method Hub()", "*webhook_test.GadgetV2 (v2) has a method Hub()"}},
		{"spoke without ConvertTo", func() *runtime.Scheme {
			s := runtime.NewScheme()
			s.AddKnownTypeWithName(gadgetV1.WithKind("Gadget"), &GadgetPlain{})
			s.AddKnownTypeWithName(gadgetV2.WithKind("Gadget"), &GadgetV2{})
			return s
		}, func(m *manager.Manager) error { return webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}) },
			[]string{"*webhook_test.GadgetPlain (v1) lacks ConvertTo"}},
		{"a version without a Spoke", gadgetScheme,
			func(m *manager.Manager) error {
				return webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{Spokes: []webhook.Spoke[*GadgetV2]{nil}})
			}, []string{"Spokes[0] is nil"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := manager.New(env.Config(), manager.Options{
				Scheme: tt.scheme(), Metrics: manager.MetricsOptions{BindAddress: "0"},
				Webhook: manager.WebhookOptions{Port: freePort(t)},
			})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.reg(m)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("RegisterConversion = %v, want an error saying %q", err, w)
				}
			}
		})
	}
}
