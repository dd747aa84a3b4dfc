package container

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A stranger who reaches the deployed operator's webhook port floods it
// with 60 admission bodies of 6.9 MiB at once: the flood is shed with 503,
// unread, and a legitimate admission review, a few hundred bytes, is
// answered beside it.
func TestAdmissionFloodIsShed(t *testing.T) {
	op := runOperator(t)
	waitServing(t, op)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxConnsPerHost: 0}
	t.Cleanup(tr.CloseIdleConnections)
	url := "https://" + op.webhookAddr + "/validate-samples-opkit-dev-v1alpha1-mirror"
	large := bytes.Repeat([]byte(" "), 69<<20/10)
	const flood = 60
	codes := make(chan int, flood)
	var wg sync.WaitGroup
	for range flood {
		wg.Go(func() {
			code, _, err := post(t.Context(), tr, url, large, 0)
			if err != nil {
				code = -1 // the server may close a shed request's connection before it is sent
			}
			codes <- code
		})
	}
	code, body, err := post(t.Context(), tr, url, []byte(smallAdmission), 30*time.Second)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Errorf("a small admission review beside the flood: %d %v %.300s, want 200 allowed", code, err, body)
	}
	wg.Wait()
	close(codes)
	byCode := map[int]int{}
	for c := range codes {
		byCode[c]++
	}
	t.Logf("the flood's answers by status (-1: connection closed): %v", byCode)
	// 60 bodies of 6.9 MiB at once cannot all fit the large bodies' 12
	// MiB: a server that queued them all would hold them, or keep the
	// small review waiting behind them.
	if byCode[http.StatusServiceUnavailable] == 0 {
		t.Errorf("none of %d large bodies sent at once was shed with 503: %v", flood, byCode)
	}
	op.checkRunning(t)
}

// Four strangers declare bodies of 3.5 MiB to /convert, the whole budget
// of large bodies between them, and send a few bytes each: a conversion
// of one Mirror, as the API server sends for a read, is answered at once
// from the room kept for small bodies, and each slow body is cut off.
func TestSlowConvertCallersDoNotStarveConversion(t *testing.T) {
	op := runOperator(t)
	waitServing(t, op)
	var slow []net.Conn
	for range 4 {
		conn, err := tls.Dial("tcp", op.webhookAddr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"apiVersion\":", 7<<19)
		slow = append(slow, conn)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(tr.CloseIdleConnections)
	// Well below the 30 s the slow bodies held the budget before: the
	// small conversion must not wait for them.
	if err := convertWithin(t.Context(), tr, "https://"+op.webhookAddr+"/convert", smallReview, 20*time.Second); err != nil {
		t.Errorf("a small conversion beside four slow bodies: %v", err)
	}
	for i, conn := range slow {
		// Shed at once, or cut off at its deadline (5 s plus 3.5 s for
		// its length): the server ends the connection either way.
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadAll(conn); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("slow body %d: the server still holds it after a minute", i)
			}
		}
	}
	op.checkRunning(t)
}

// waitServing waits until the operator's /readyz passes: its webhook
// server serves.
func waitServing(t *testing.T, op operator) {
	t.Helper()
	waitFor(t, op.pid, "/readyz answers 200 (the webhook server serves)", func(ctx context.Context) (bool, error) {
		code, _, err := get(ctx, "http://"+op.healthAddr+"/readyz", "")
		return err == nil && code == http.StatusOK, nil
	})
}

// post posts body to url as JSON, within timeout (0: the context's), and
// returns the status and the answer.
func post(ctx context.Context, tr http.RoundTripper, url string, body []byte, timeout time.Duration) (int, string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// convertWithin is convert, given up after timeout.
func convertWithin(ctx context.Context, tr http.RoundTripper, url string, body []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return convert(ctx, tr, url, body)
}

// smallAdmission is an AdmissionReview of a valid Mirror, a few hundred
// bytes, as the API server sends one.
const smallAdmission = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"small",` +
	`"kind":{"group":"samples.opkit.dev","version":"v1alpha1","kind":"Mirror"},` +
	`"resource":{"group":"samples.opkit.dev","version":"v1alpha1","resource":"mirrors"},` +
	`"namespace":"platform","name":"small","operation":"CREATE","userInfo":{"username":"alice"},` +
	`"object":{"apiVersion":"samples.opkit.dev/v1alpha1","kind":"Mirror","metadata":{"namespace":"platform","name":"small"},` +
	`"spec":{"source":{"kind":"ConfigMap","name":"ca-bundle"},"namespaceSelector":{}}}}}`
