package container

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
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
// valid ConversionReviews to /convert: the operator converts each, or
// sheds it with 503 at once when the budget of large bodies is taken,
// converts at least one of each burst, is not OOM-killed, and its
// container's cgroup never reaches the Deployment's memory limit; a small
// conversion, the API server's of one Mirror, is answered after.
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
		converted := 0
		for i, err := range errs {
			switch {
			case err == nil:
				converted++
			case !errors.Is(err, errShed):
				t.Errorf("round %d, request %d: %v", round, i, err)
			}
		}
		if converted == 0 {
			t.Errorf("round %d: none of %d reviews converted", round, burstSize)
		}
		t.Logf("round %d: %d of %d reviews converted, the rest shed with 503", round, converted, burstSize)
	}
	op.checkRunning(t)
	if err := convert(t.Context(), tr, url, smallReview); err != nil {
		t.Errorf("a small conversion after the bursts: %v", err)
	}
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

// errShed is convert's error for a review the server shed: 503, unread.
var errShed = errors.New("shed with 503 Service Unavailable")

// smallReview is a ConversionReview of one Mirror, as the API server sends
// for a read of one.
var smallReview = []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"small","desiredAPIVersion":"samples.opkit.dev/v1beta1","objects":[` +
	`{"apiVersion":"samples.opkit.dev/v1alpha1","kind":"Mirror","metadata":{"namespace":"platform","name":"small"},"spec":{"source":{"kind":"ConfigMap","name":"ca-bundle"},"namespaceSelector":{}}}]}}`)

// convert posts body to url and checks that every object was converted,
// or returns errShed.
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
	if resp.StatusCode == http.StatusServiceUnavailable {
		return errShed
	}
	var review apix.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return fmt.Errorf("%s: decode the answer: %w", resp.Status, err)
	}
	var sent apix.ConversionReview
	if err := json.Unmarshal(body, &sent); err != nil {
		return err
	}
	if r := review.Response; r == nil || r.Result.Status != "Success" || len(r.ConvertedObjects) != len(sent.Request.Objects) {
		return fmt.Errorf("%s: the answer is not %d converted objects: %+v", resp.Status, len(sent.Request.Objects), r)
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
