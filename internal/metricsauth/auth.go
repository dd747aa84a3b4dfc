package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
)

// handler is what New returns. It is safe for concurrent use.
type handler struct {
	clientset kubernetes.Interface
	next      http.Handler
	opts      Options
	// authenticated maps a token's hash to the goodToken of its last
	// review that authenticated it, for an hour: fresh for opts.TTL.
	authenticated *cache.LRUExpireCache
	// refused holds the hashes of tokens whose last review did not
	// authenticate them, for opts.FailureTTL. A hash is never in both.
	refused *cache.LRUExpireCache
	// decisions maps a decisionKey to whether the SubjectAccessReview
	// allowed it.
	decisions *cache.LRUExpireCache
	// budget bounds the TokenReviews of tokens not in authenticated.
	budget *rate.Limiter
}

var _ http.Handler = (*handler)(nil)

type tokenKey [sha256.Size]byte

type decisionKey [sha256.Size]byte

type goodToken struct {
	user       authenticationv1.UserInfo
	reviewedAt time.Time
}

// New returns a handler that serves next to requests the API server
// authenticates and authorizes, through clientset (see the package doc).
// Options must not be negative.
func New(clientset kubernetes.Interface, next http.Handler, opts Options) http.Handler {
	o := opts.withDefaults()
	return &handler{
		clientset:     clientset,
		next:          next,
		opts:          o,
		authenticated: cache.NewLRUExpireCacheWithClock(o.CacheSize, o.Clock),
		refused:       cache.NewLRUExpireCacheWithClock(o.CacheSize, o.Clock),
		decisions:     cache.NewLRUExpireCacheWithClock(o.CacheSize, o.Clock),
		budget:        rate.NewLimiter(rate.Limit(o.TokenReviewsPerSecond), o.TokenReviewBurst),
	}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		http.Error(w, "Unauthorized: send a bearer token", http.StatusUnauthorized)
		return
	case len(token) > MaxTokenBytes:
		http.Error(w, fmt.Sprintf("Unauthorized: the bearer token is longer than %d bytes", MaxTokenBytes), http.StatusUnauthorized)
		return
	}
	user, ok := h.authenticate(r.Context(), w, token)
	if !ok {
		return
	}
	verb := strings.ToLower(r.Method)
	allowed, err := h.authorize(r.Context(), user, verb, r.URL.Path)
	if err != nil {
		h.opts.Logger.Error(err, "SubjectAccessReview failed; does the operator's RBAC allow create on subjectaccessreviews?")
		http.Error(w, "Internal Server Error: cannot authorize the request", http.StatusInternalServerError)
		return
	}
	if !allowed {
		http.Error(w, "Forbidden: user "+user.Username+" may not "+verb+" "+r.URL.Path, http.StatusForbidden)
		return
	}
	h.next.ServeHTTP(w, r)
}

// authenticate returns the token's user, or writes the refusal and
// returns false.
func (h *handler) authenticate(ctx context.Context, w http.ResponseWriter, token string) (authenticationv1.UserInfo, bool) {
	key := tokenKey(sha256.Sum256([]byte(token)))
	now := h.opts.Clock.Now()
	v, known := h.authenticated.Get(key)
	if known && now.Sub(v.(goodToken).reviewedAt) < h.opts.TTL {
		return v.(goodToken).user, true
	}
	if !known {
		if _, ok := h.refused.Get(key); ok {
			return refuse(w, "Unauthorized", http.StatusUnauthorized)
		}
		if wait := h.spend(now); wait > 0 {
			secs := strconv.Itoa(int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", secs)
			return refuse(w, "Too Many Requests: too many new bearer tokens to review; retry in "+secs+"s", http.StatusTooManyRequests)
		}
	}
	tr, err := h.clientset.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		h.opts.Logger.Error(err, "TokenReview failed; does the operator's RBAC allow create on tokenreviews?")
		return refuse(w, "Internal Server Error: cannot review the token", http.StatusInternalServerError)
	}
	if !tr.Status.Authenticated {
		h.authenticated.Remove(key)
		h.refused.Add(key, struct{}{}, h.opts.FailureTTL)
		return refuse(w, "Unauthorized", http.StatusUnauthorized)
	}
	h.authenticated.Add(key, goodToken{user: tr.Status.User, reviewedAt: now}, remembered)
	return tr.Status.User, true
}

// spend takes one review from the budget and returns 0, or returns how
// long until one is available and takes none.
func (h *handler) spend(now time.Time) time.Duration {
	res := h.budget.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait > 0 {
		res.CancelAt(now)
		return max(wait, time.Second)
	}
	return 0
}

func refuse(w http.ResponseWriter, msg string, status int) (authenticationv1.UserInfo, bool) {
	http.Error(w, msg, status)
	return authenticationv1.UserInfo{}, false
}

// authorize returns whether user may verb path, from a decision cached or
// a SubjectAccessReview.
func (h *handler) authorize(ctx context.Context, u authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := newDecisionKey(u, verb, path)
	if v, ok := h.decisions.Get(key); ok {
		return v.(bool), nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := h.clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	ttl := h.opts.TTL
	if !sar.Status.Allowed {
		ttl = h.opts.FailureTTL
	}
	h.decisions.Add(key, sar.Status.Allowed, ttl)
	return sar.Status.Allowed, nil
}

// newDecisionKey hashes the whole identity, groups and extra included,
// with the verb and path, each string length-prefixed so that no two
// different requests share a key.
func newDecisionKey(u authenticationv1.UserInfo, verb, path string) decisionKey {
	hash := sha256.New()
	write := func(s string) {
		_ = binary.Write(hash, binary.BigEndian, uint64(len(s)))
		hash.Write([]byte(s))
	}
	write(verb)
	write(path)
	write(u.Username)
	write(u.UID)
	write(strconv.Itoa(len(u.Groups)))
	for _, g := range u.Groups {
		write(g)
	}
	for _, k := range slices.Sorted(maps.Keys(u.Extra)) {
		write(k)
		write(strconv.Itoa(len(u.Extra[k])))
		for _, v := range u.Extra[k] {
			write(v)
		}
	}
	return decisionKey(hash.Sum(nil))
}
