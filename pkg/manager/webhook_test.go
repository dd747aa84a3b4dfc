package manager_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// Invalid webhook options fail New, naming the field.
func TestWebhookOptionsInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts manager.WebhookOptions
		want string
	}{
		{"negative port", manager.WebhookOptions{Port: -1}, "Options.Webhook.Port is -1"},
		{"port too large", manager.WebhookOptions{Port: 70000}, "Options.Webhook.Port is 70000"},
		{"fields without a port", manager.WebhookOptions{CertDir: "/certs"}, "Options.Webhook.Port is 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manager.New(env.Config(), manager.Options{Webhook: tt.opts})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Without a webhook server there is nothing to register on.
func TestWebhookServerOff(t *testing.T) {
	m := newManager(t, env.Namespace(t), manager.Options{})
	if s := m.WebhookServer(); s != nil {
		t.Fatalf("WebhookServer() = %v without Options.Webhook, want nil", s)
	}
}

// A CertDir without a certificate fails Start at once, naming the files it
// wants, rather than a runnable failing later.
func TestWebhookCertificateMissing(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, env.Namespace(t), manager.Options{Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 1, CertDir: dir}})
	err := m.Start(t.Context())
	if !errors.Is(err, manager.ErrNoWebhookCertificate) {
		t.Fatalf("Start = %v, want an error wrapping ErrNoWebhookCertificate", err)
	}
	for _, f := range []string{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("Start = %v, want it to name %s", err, f)
		}
	}
}
