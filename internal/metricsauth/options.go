package metricsauth

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Options configure New. The zero value is valid.
type Options struct {
	// TTL is how long an authenticated token's review, and a decision
	// that allows a request, are reused. Defaults to DefaultTTL.
	TTL time.Duration
	// FailureTTL is how long a token that did not authenticate, and a
	// decision that denies a request, are remembered. Defaults to
	// DefaultFailureTTL.
	FailureTTL time.Duration
	// CacheSize bounds each cache: authenticated tokens, refused tokens,
	// and decisions. Defaults to DefaultCacheSize.
	CacheSize int
	// TokenReviewsPerSecond refills the bucket that bounds the
	// TokenReviews of tokens not seen authenticated within the hour.
	// Defaults to DefaultTokenReviewsPerSecond.
	TokenReviewsPerSecond float64
	// TokenReviewBurst is the size of that bucket. Defaults to
	// DefaultTokenReviewBurst.
	TokenReviewBurst int
	// Clock gives the time, for the caches and the bucket. Defaults to
	// the real clock.
	Clock clock.PassiveClock
	// Logger logs reviews that fail. Defaults to logr.Discard().
	Logger logr.Logger
}

// Defaults of Options.
const (
	// DefaultTTL is the token cache TTL of kube-rbac-proxy and of the
	// API server's webhook token authenticator.
	DefaultTTL = 2 * time.Minute
	// DefaultFailureTTL is the API server's for a webhook's unauthenticated
	// answers.
	DefaultFailureTTL            = 10 * time.Second
	DefaultCacheSize             = 4096
	DefaultTokenReviewsPerSecond = 5
	DefaultTokenReviewBurst      = 10
)

// MaxTokenBytes is the longest bearer token that is reviewed. Service
// account tokens are about 1 KiB, OIDC ID tokens a few.
const MaxTokenBytes = 8 << 10

// remembered is how long a token that authenticated keeps its review
// outside the bucket once its TTL is over: about a projected service
// account token's lifetime.
const remembered = time.Hour

func (o Options) withDefaults() Options {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.FailureTTL == 0 {
		o.FailureTTL = DefaultFailureTTL
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.TokenReviewsPerSecond == 0 {
		o.TokenReviewsPerSecond = DefaultTokenReviewsPerSecond
	}
	if o.TokenReviewBurst == 0 {
		o.TokenReviewBurst = DefaultTokenReviewBurst
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}
