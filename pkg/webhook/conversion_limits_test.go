package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

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

// Callers who reach the port without a certificate (as any pod may) and
// trickle large bodies cannot starve conversion: with four slow bodies of
// 3.5 MiB each (the whole budget between them) sent to /convert, each
// holding the budget or shed, a review of one small object is still
// converted, and each slow body is cut off or refused rather than held.
func TestConversionServedBesideSlowBodies(t *testing.T) {
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
	const slow, length = 4, 7 << 19
	answered := make(chan string, slow)
	for range slow {
		go func() { answered <- slowBody(url, caBundle, length) }()
	}
	var cut []string
	poll(t, "the slow bodies to be held or refused", func() bool {
		for len(answered) > 0 {
			cut = append(cut, <-answered)
		}
		return inFlight(t, webhook.ConversionPath)+len(cut) == slow
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // under the old 30 s read timeout
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(gadgetReview(t, "apiextensions.k8s.io/v1", "ConversionReview", 0)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a small conversion beside %d slow bodies: %v", slow, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"endpoint":"example.com:443"`) {
		t.Errorf("a small conversion beside %d slow bodies: %d %s, want it converted", slow, resp.StatusCode, body)
	}
	for len(cut) < slow {
		cut = append(cut, <-answered)
	}
	t.Logf("the slow bodies were answered: %q", cut)
}

// slowBody posts the start of a body of length bytes to url and stalls,
// and returns the status line of the answer, or the read error, once the
// server answers or closes the connection.
func slowBody(url string, caBundle []byte, length int) string {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	host := strings.TrimPrefix(strings.TrimSuffix(url, webhook.ConversionPath), "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: pool})
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", webhook.ConversionPath, host, length)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(line)
}

// inFlight is controller-runtime's gauge of the requests in flight at path
// of any webhook server of the process.
func inFlight(t *testing.T, path string) int {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_webhook_requests_in_flight" {
			continue
		}
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == path {
					return int(metric.GetGauge().GetValue())
				}
			}
		}
	}
	return 0
}
