package metricsauth_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/opkit-dev/opkit/internal/metricsauth"
)

// apiServer is a fake clientset that authenticates the token "good" as
// user "prometheus", which may get /metrics, and the token "other" as
// user "stranger", which may not, and counts the reviews it makes.
type apiServer struct {
	*fake.Clientset
	tokenReviews, accessReviews atomic.Int64
	fail                        atomic.Bool
}

func newAPIServer() *apiServer {
	s := &apiServer{Clientset: fake.NewClientset()}
	s.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.tokenReviews.Add(1)
		if s.fail.Load() {
			return true, nil, errors.New("forbidden")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		switch tr.Spec.Token {
		case "good":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "prometheus", Groups: []string{"system:authenticated"}}}
		case "other":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "stranger"}}
		}
		return true, tr, nil
	})
	s.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.accessReviews.Add(1)
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status.Allowed = sar.Spec.User == "prometheus" && sar.Spec.NonResourceAttributes.Path == "/metrics"
		return true, sar, nil
	})
	return s
}

type fixture struct {
	api   *apiServer
	clock *testingclock.FakePassiveClock
	h     http.Handler
	opts  metricsauth.Options
}

func newFixture(opts metricsauth.Options) *fixture {
	f := &fixture{api: newAPIServer(), clock: testingclock.NewFakePassiveClock(time.Unix(1e9, 0))}
	opts.Clock = f.clock
	f.opts = opts
	f.h = metricsauth.New(f.api, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }), opts)
	return f
}

func (f *fixture) get(token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func (f *fixture) step(d time.Duration) { f.clock.SetTime(f.clock.Now().Add(d)) }

// reviews returns the TokenReviews and SubjectAccessReviews made so far.
func (f *fixture) reviews() [2]int64 {
	return [2]int64{f.api.tokenReviews.Load(), f.api.accessReviews.Load()}
}

func (f *fixture) expect(t *testing.T, what, token string, code int, reviews [2]int64) {
	t.Helper()
	if got := f.get(token).Code; got != code {
		t.Errorf("%s: status %d, want %d", what, got, code)
	}
	if diff := cmp.Diff(reviews, f.reviews()); diff != "" {
		t.Errorf("%s: [TokenReviews SubjectAccessReviews] (-want +got):\n%s", what, diff)
	}
}

func TestGoodTokenReviewedOncePerTTL(t *testing.T) {
	f := newFixture(metricsauth.Options{})
	for range 100 {
		f.expect(t, "the good token within the TTL", "good", http.StatusOK, [2]int64{1, 1})
	}
	f.step(metricsauth.DefaultTTL - time.Second)
	f.expect(t, "just before the TTL ends", "good", http.StatusOK, [2]int64{1, 1})
	f.step(2 * time.Second)
	for range 100 {
		f.expect(t, "after the TTL", "good", http.StatusOK, [2]int64{2, 2})
	}
}

func TestRefusalsCachedForFailureTTL(t *testing.T) {
	f := newFixture(metricsauth.Options{})
	f.expect(t, "a bad token", "bad", http.StatusUnauthorized, [2]int64{1, 0})
	f.expect(t, "a user without RBAC", "other", http.StatusForbidden, [2]int64{2, 1})
	for range 10 {
		f.expect(t, "a bad token again", "bad", http.StatusUnauthorized, [2]int64{2, 1})
		f.expect(t, "a user without RBAC again", "other", http.StatusForbidden, [2]int64{2, 1})
	}
	f.step(metricsauth.DefaultFailureTTL + time.Second)
	f.expect(t, "a bad token after FailureTTL", "bad", http.StatusUnauthorized, [2]int64{3, 1})
	f.expect(t, "a user without RBAC after FailureTTL", "other", http.StatusForbidden, [2]int64{3, 2})
}

func TestRefusedWithoutReview(t *testing.T) {
	f := newFixture(metricsauth.Options{})
	f.expect(t, "no token", "", http.StatusUnauthorized, [2]int64{0, 0})
	long := strings.Repeat("x", metricsauth.MaxTokenBytes+1)
	f.expect(t, "a token over MaxTokenBytes", long, http.StatusUnauthorized, [2]int64{0, 0})
}

func TestFailedReviewNotCached(t *testing.T) {
	f := newFixture(metricsauth.Options{})
	f.api.fail.Store(true)
	f.expect(t, "the API server refuses the review", "good", http.StatusInternalServerError, [2]int64{1, 0})
	f.api.fail.Store(false)
	f.expect(t, "the API server reviews again", "good", http.StatusOK, [2]int64{2, 1})
}

// A flood of distinct bad tokens costs Burst TokenReviews, then
// PerSecond a second, new tokens' reviews all told; the rest get 429
// with Retry-After; the good token is served throughout, after its TTL
// too.
func TestFloodOfBadTokensBounded(t *testing.T) {
	opts := metricsauth.Options{TokenReviewsPerSecond: 5, TokenReviewBurst: 20}
	f := newFixture(opts)
	f.expect(t, "the good token before the flood", "good", http.StatusOK, [2]int64{1, 1})
	flood := func(round int) map[int]int {
		codes := map[int]int{}
		for i := range 1000 {
			w := f.get(fmt.Sprintf("bad-%d-%d", round, i))
			codes[w.Code]++
			if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") != "1" {
				t.Fatalf("429 with Retry-After %q, want 1 (a review every 200ms)", w.Header().Get("Retry-After"))
			}
			if i%100 == 0 && f.get("good").Code != http.StatusOK {
				t.Fatalf("the good token refused during the flood")
			}
		}
		return codes
	}
	// The good token took one review of the burst.
	want := map[int]int{http.StatusUnauthorized: 19, http.StatusTooManyRequests: 981}
	if diff := cmp.Diff(want, flood(0)); diff != "" {
		t.Errorf("status codes of 1,000 bad tokens (-want +got):\n%s", diff)
	}
	if got := f.api.tokenReviews.Load(); got != 20 {
		t.Errorf("the good token and 1,000 bad tokens cost %d TokenReviews, want Burst = 20", got)
	}
	f.step(3 * time.Second)
	want = map[int]int{http.StatusUnauthorized: 15, http.StatusTooManyRequests: 985}
	if diff := cmp.Diff(want, flood(1)); diff != "" {
		t.Errorf("status codes of 1,000 more bad tokens 3s later (-want +got):\n%s", diff)
	}
	if got := f.api.tokenReviews.Load(); got != 20+15 {
		t.Errorf("the good token and 2,000 bad tokens over 3s cost %d TokenReviews, want Burst + 3s × 5/s = 35", got)
	}
	// The good token's TTL ends while the budget is spent: it is reviewed
	// again outside it.
	f.step(metricsauth.DefaultTTL)
	for i := range 1000 {
		f.get(fmt.Sprintf("bad-2-%d", i))
	}
	reviews := f.api.tokenReviews.Load()
	f.expect(t, "the good token after its TTL, budget spent", "good", http.StatusOK, [2]int64{reviews + 1, 2})
	f.expect(t, "a new token, budget spent", "new", http.StatusTooManyRequests, [2]int64{reviews + 1, 2})
}

// Refused tokens live in a cache of their own, so however many a flood
// brings they do not push the good token out.
func TestFloodDoesNotEvictGoodToken(t *testing.T) {
	f := newFixture(metricsauth.Options{CacheSize: 4, TokenReviewBurst: 1000})
	f.expect(t, "the good token", "good", http.StatusOK, [2]int64{1, 1})
	for i := range 100 {
		f.get(fmt.Sprintf("bad-%d", i))
	}
	f.expect(t, "the good token after 100 bad ones", "good", http.StatusOK, [2]int64{101, 1})
}
