package webhook_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/pkg/webhook"
)

// The limits of controller-runtime's admission handler: a body of 7 MiB or
// more is refused.
const admissionLimit = 7 << 20

// /convert refuses what is not a ConversionReview the API server would
// send, before converting anything: too large a body (413, whether its
// length is told up front or not), another content type or another kind
// (400, naming what was wrong); and it still converts a review just under
// the limit.
func TestConversionRefusesWhatIsNotAReview(t *testing.T) {
	ns := env.Namespace(t)
	m, url, caBundle := newGadgetManager(t, ns)
	if err := webhook.RegisterConversion(m, webhook.Conversion[*GadgetV2]{}); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	c := httpsClient(t, caBundle)
	poll(t, "the webhook server to serve", func() bool {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})

	for _, tt := range []struct {
		name        string
		body        []byte
		chunked     bool
		contentType string
		wantCode    int
		wantText    string
	}{
		{"over the limit", gadgetReview(t, "apiextensions.k8s.io/v1", "ConversionReview", admissionLimit), false, "application/json", http.StatusRequestEntityTooLarge, "7340032"},
		{"over the limit, chunked", gadgetReview(t, "apiextensions.k8s.io/v1", "ConversionReview", admissionLimit), true, "application/json", http.StatusRequestEntityTooLarge, "7340032"},
		{"another content type", gadgetReview(t, "apiextensions.k8s.io/v1", "ConversionReview", 0), false, "text/plain", http.StatusBadRequest, "application/json"},
		{"an AdmissionReview", gadgetReview(t, "admission.k8s.io/v1", "AdmissionReview", 0), false, "application/json", http.StatusBadRequest, "AdmissionReview"},
		{"no request", []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), false, "application/json", http.StatusBadRequest, "request"},
		{"not JSON", []byte(`{"apiVersion":`), false, "application/json", http.StatusBadRequest, "decode"},
		{"just under the limit", gadgetReview(t, "apiextensions.k8s.io/v1", "ConversionReview", admissionLimit-1), true, "application/json", http.StatusOK, `"endpoint":"example.com:443"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tt.contentType)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v", webhook.ConversionPath, err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(got), tt.wantText) {
				t.Errorf("POST %d bytes (%s) = %d %.300s, want %d saying %q", len(tt.body), tt.name, resp.StatusCode, got, tt.wantCode, tt.wantText)
			}
		})
	}
}

// gadgetReview returns a review of the given apiVersion and kind asking to
// convert one GadgetV1 to v2, padded with an annotation to size bytes when
// size is not 0.
func gadgetReview(t *testing.T, apiVersion, kind string, size int) []byte {
	t.Helper()
	build := func(pad string) []byte {
		obj := map[string]any{
			"apiVersion": gadgetV1.String(), "kind": "Gadget",
			"metadata": map[string]any{"namespace": "ns", "name": "big", "annotations": map[string]string{"pad": pad}},
			"spec":     map[string]any{"host": "example.com", "port": 443},
		}
		b, err := json.Marshal(map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"request": map[string]any{"uid": "u-1", "desiredAPIVersion": gadgetV2.String(), "objects": []any{obj}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := build("")
	if size == 0 {
		return b
	}
	return build(strings.Repeat("x", size-len(b)))
}

// httpsClient trusts caBundle and presents no client certificate.
func httpsClient(t *testing.T, caBundle []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatal("no certificate in the CA bundle")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
