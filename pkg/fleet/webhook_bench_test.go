package fleet_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// BenchmarkMemberWebhook serves a validating webhook on member paths, in
// process (no TLS), with 10 and 1,000 members engaged, and reports what a
// request costs: the time and allocations per request should not grow with
// the members. members=0 is the same webhook served by webhook.Register at
// its plain path, for comparison.
func BenchmarkMemberWebhook(b *testing.B) {
	for _, members := range []int{0, 10, 1000} {
		b.Run("members="+strconv.Itoa(members), func(b *testing.B) {
			m, err := manager.New(env.Config(), manager.Options{
				Metrics: manager.MetricsOptions{BindAddress: "0"},
				Health:  manager.HealthOptions{BindAddress: "0"},
				Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 9443, CertDir: b.TempDir()},
			})
			if err != nil {
				b.Fatal(err)
			}
			f := newFleet(b, fleet.Options{ProbeInterval: -1})
			// Nothing listens there: a member's webhook path asks its API
			// server nothing.
			cfg := &rest.Config{Host: "https://127.0.0.1:1"}
			for i := range members {
				if err := f.Engage(b.Context(), fleet.Member{Name: "m" + strconv.Itoa(i), Config: cfg}); err != nil {
					b.Fatal(err)
				}
			}
			hooks := webhook.Hooks[*corev1.ConfigMap]{Validator: webhook.ValidatorFuncs[*corev1.ConfigMap]{
				Create: func(ctx context.Context, _ *corev1.ConfigMap) (webhook.Warnings, error) {
					if fleet.ClusterFrom(ctx) == nil && ctx.Value(plainKey{}) == nil {
						b.Fatal("no member in the context")
					}
					return nil, nil
				},
			}}
			path := fleet.MemberPath("m"+strconv.Itoa(members-1), webhook.ValidatePath(configMapKind))
			if members == 0 {
				path = webhook.ValidatePath(configMapKind)
				plain := hooks.Validator
				hooks.Validator = webhook.ValidatorFuncs[*corev1.ConfigMap]{Create: func(ctx context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
					return plain.ValidateCreate(context.WithValue(ctx, plainKey{}, true), cm)
				}}
				err = webhook.Register(m, hooks)
			} else {
				err = fleet.RegisterWebhooks(m, f, hooks, fleet.WebhookOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			body := admissionReview(b, "alice")
			url := "https://127.0.0.1:9443" + path
			mux := m.WebhookServer().WebhookMux()
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequestWithContext(b.Context(), http.MethodPost, url, bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"allowed":true`)) {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}

// plainKey marks the context of the webhook served at its plain path.
type plainKey struct{}
