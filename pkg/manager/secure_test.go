package manager_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// In secure mode /metrics is served over HTTPS to a token that the API
// server authenticates and authorizes for get on /metrics, and to nobody
// else.
func TestSecureMetrics(t *testing.T) {
	s := newSecureMetrics(t)
	for _, tt := range []struct {
		who   string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a forged token", "not-a-token", http.StatusUnauthorized},
		{"a service account without RBAC", s.stranger, http.StatusForbidden},
		{"a service account allowed to get /metrics", s.reader, http.StatusOK},
	} {
		if got := s.scrape(t, tt.token); got.StatusCode != tt.want {
			t.Errorf("scrape with %s = %d, want %d", tt.who, got.StatusCode, tt.want)
		}
	}
}

// /debug/holds, beside /metrics, is authorized for its own path: a token
// allowed to get /metrics is refused it, as are no token and a stranger.
func TestSecureDebugHolds(t *testing.T) {
	s := newSecureMetrics(t)
	url := strings.TrimSuffix(s.url, "/metrics") + "/debug/holds"
	for _, tt := range []struct {
		who   string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a service account without RBAC", s.stranger, http.StatusForbidden},
		{"a service account allowed to get /metrics only", s.reader, http.StatusForbidden},
	} {
		if got := s.get(t, url, tt.token); got.StatusCode != tt.want {
			t.Errorf("GET /debug/holds with %s = %d, want %d", tt.who, got.StatusCode, tt.want)
		}
	}
}

// A flood of distinct bad tokens, which no cache can answer, costs the
// API server a bounded number of TokenReviews, is refused with 429 once
// over the budget, and does not keep the scraper with a good token out.
func TestSecureMetricsFloodOfBadTokens(t *testing.T) {
	// The defaults of MetricsOptions.Auth.
	const burst, perSecond = 10, 5.0
	s := newSecureMetrics(t)
	if got := s.scrape(t, s.reader); got.StatusCode != http.StatusOK {
		t.Fatalf("scrape with the reader's token = %d, want 200", got.StatusCode)
	}
	before := tokenReviews(t)
	began := time.Now()
	codes := map[int]int{}
	retryAfter := ""
	for i := range 1000 {
		resp := s.scrape(t, fmt.Sprintf("bad-token-%d", i))
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && retryAfter == "" {
			retryAfter = resp.Header.Get("Retry-After")
		}
		if i%100 == 0 {
			if got := s.scrape(t, s.reader); got.StatusCode != http.StatusOK {
				t.Errorf("scrape with the reader's token during the flood = %d, want 200", got.StatusCode)
			}
		}
	}
	elapsed := time.Since(began)
	reviews := tokenReviews(t) - before
	// An upper bound from the time the flood took, not a threshold on it.
	limit := burst + perSecond*elapsed.Seconds()
	t.Logf("1000 bad tokens in %v: %v TokenReviews, status codes %v", elapsed, reviews, codes)
	if reviews > limit {
		t.Errorf("1000 bad tokens cost %v TokenReviews, want at most %.0f (burst %d + %v/s for %v)", reviews, limit, burst, perSecond, elapsed)
	}
	if codes[http.StatusTooManyRequests] == 0 || retryAfter == "" {
		t.Errorf("no 429 with Retry-After during the flood (status codes %v)", codes)
	}
	if n := codes[http.StatusUnauthorized] + codes[http.StatusTooManyRequests]; n != 1000 {
		t.Errorf("status codes %v: want 401 or 429 for each of the 1000 bad tokens", codes)
	}
}

// secureMetrics is a manager serving /metrics in secure mode, with the
// tokens of a service account allowed to get /metrics and of one that is
// not.
type secureMetrics struct {
	url              string
	hc               *http.Client
	reader, stranger string
}

func newSecureMetrics(t *testing.T) *secureMetrics {
	t.Helper()
	ns := env.Namespace(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	ctx := t.Context()
	token := func(sa string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	s := &secureMetrics{reader: token("prometheus"), stranger: token("stranger")}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(t.Context(), binding.Name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(t.Context(), role.Name, metav1.DeleteOptions{})
	})

	m := newManager(t, ns, manager.Options{Metrics: manager.MetricsOptions{BindAddress: "127.0.0.1:0", Secure: true}})
	start(t, m)
	eventually(t, "metrics to listen", func() bool { return m.MetricsAddr() != "" })
	s.url = "https://" + m.MetricsAddr() + "/metrics"
	// The certificate is self-signed.
	s.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t.Cleanup(s.hc.CloseIdleConnections)
	return s
}

// scrape gets /metrics with token, if any, and returns the response with
// its body read.
func (s *secureMetrics) scrape(t *testing.T, token string) *http.Response {
	t.Helper()
	return s.get(t, s.url, token)
}

func (s *secureMetrics) get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp
}

// tokenReviews returns how many TokenReviews the test API server has been
// asked to create, from its own apiserver_request_total.
func tokenReviews(t *testing.T) float64 {
	t.Helper()
	raw, err := env.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read the API server's /metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse the API server's /metrics: %v", err)
	}
	var n float64
	for _, m := range mfs["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["resource"] == "tokenreviews" && labels["verb"] == "POST" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}
