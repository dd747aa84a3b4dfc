package container

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Conversion requests of the largest size the webhook server takes (just
// under controller-runtime's admission limit, 7 MiB), each a list of
// Mirrors as the API server sends one, in bursts of burstSize at once.
const (
	maxBody     = 7<<20 - 1
	perReview   = 7
	burstSize   = 8
	burstRounds = 3
)

// A stranger who reaches the webhook port sends bursts of the largest
// valid ConversionReviews to /convert: the operator converts every one and
// is not OOM-killed, and its container's cgroup never reaches the
// Deployment's memory limit.
func TestConvertBurstStaysUnderTheMemoryLimit(t *testing.T) {
	op := runOperator(t)
	limit := op.mgr.Resources.Limits.Memory().Value()
	waitFor(t, op.pid, "/readyz answers 200 (the webhook server serves)", func(ctx context.Context) (bool, error) {
		code, _, err := get(ctx, "http://"+op.healthAddr+"/readyz", "")
		return err == nil && code == http.StatusOK, nil
	})
	before, _, _ := cgroupPeak(op.pid)
	body := mirrorReview(t)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // a stranger checks nothing
	t.Cleanup(tr.CloseIdleConnections)
	url := "https://" + op.webhookAddr + "/convert"
	for round := range burstRounds {
		var wg sync.WaitGroup
		errs := make([]error, burstSize)
		for i := range burstSize {
			wg.Go(func() { errs[i] = convert(t.Context(), tr, url, body) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, request %d: %v", round, i, err)
			}
		}
	}
	op.checkRunning(t)
	peak, file, err := cgroupPeak(op.pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the container cgroup's peak charge (%s): %.1f MiB before the bursts, %.1f MiB after %d rounds of %d reviews of %d bytes; the operator's VmHWM %s; the limit %.0f MiB",
		file, float64(before)/(1<<20), float64(peak)/(1<<20), burstRounds, burstSize, len(body), procStatus(t, op.pid)["VmHWM"], float64(limit)/(1<<20))
	if peak >= limit {
		t.Errorf("the container's cgroup reached %d bytes, the Deployment's limit %d", peak, limit)
	}
}

// checkRunning stops t unless the container's first process still runs:
// the kernel's OOM killer would have ended it (and with it the cgroup
// this test reads).
func (op operator) checkRunning(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", op.pid)); err != nil {
		t.Fatalf("the operator's process %d is gone (OOM-killed?): %v", op.pid, err)
	}
}

// convert posts body to url and checks that every object was converted.
func convert(ctx context.Context, tr http.RoundTripper, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var review apix.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return fmt.Errorf("%s: decode the answer: %w", resp.Status, err)
	}
	if r := review.Response; r == nil || r.Result.Status != "Success" || len(r.ConvertedObjects) != perReview {
		return fmt.Errorf("%s: the answer is not %d converted objects: %+v", resp.Status, perReview, r)
	}
	return nil
}

// mirrorReview returns a ConversionReview of perReview v1alpha1 Mirrors to
// convert to v1beta1, padded with an annotation to maxBody bytes.
func mirrorReview(t *testing.T) []byte {
	t.Helper()
	build := func(pad int) []byte {
		objs := make([]any, perReview)
		for i := range objs {
			objs[i] = map[string]any{
				"apiVersion": "samples.opkit.dev/v1alpha1", "kind": "Mirror",
				"metadata": map[string]any{"namespace": "platform", "name": fmt.Sprintf("big-%d", i), "annotations": map[string]string{"pad": strings.Repeat("x", pad)}},
				"spec":     map[string]any{"source": map[string]any{"kind": "ConfigMap", "name": "ca-bundle"}, "namespaceSelector": map[string]any{"matchLabels": map[string]string{"team": "a"}}},
			}
		}
		b, err := json.Marshal(map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"request": map[string]any{"uid": "burst", "desiredAPIVersion": "samples.opkit.dev/v1beta1", "objects": objs},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	small := build(0)
	pad := (maxBody - len(small)) / perReview
	body := build(pad)
	if len(body) > maxBody || len(body) < maxBody-perReview {
		t.Fatalf("the review is %d bytes, want %d", len(body), maxBody)
	}
	return body
}
