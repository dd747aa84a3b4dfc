// Package metricsauth lets a request to an operator's own endpoints (its
// /metrics and pprof) through only if the API server authenticates its
// bearer token (TokenReview) and authorizes the token's user for the
// request's verb on its path as a non-resource URL (SubjectAccessReview),
// as the API server does for its own /metrics, at a bounded cost to the
// API server however many requests strangers send.
//
// Its contract:
//
//   - Cached: a token's review is reused for Options.TTL if it
//     authenticated and for Options.FailureTTL if not; a (user, verb,
//     path) decision likewise, allowed or denied. Tokens are keyed by
//     their SHA-256, never kept. Each cache holds at most
//     Options.CacheSize entries, least recently used dropped first, and
//     refused tokens live apart from authenticated ones, so a flood
//     cannot push a good token out.
//   - Bounded: a token the handler has not seen authenticated within the
//     last hour is reviewed only within a token bucket of
//     Options.TokenReviewBurst reviews, refilled at
//     Options.TokenReviewsPerSecond: distinct bad tokens over a time T
//     cost at most Burst + PerSecond×T TokenReviews. Over the budget a
//     request gets 429 Too Many Requests with Retry-After and no review.
//   - Good tokens keep working: a cached token needs no review, and a
//     token seen authenticated within the hour is reviewed again after
//     its TTL outside the bucket, so a scraper with a good token is
//     served through a flood. A token new to the handler competes with
//     the flood for the budget.
//   - Cheap refusals: a request without a bearer token, or with one longer
//     than MaxTokenBytes, gets 401 without a review.
//   - Loud about RBAC: a review that fails (the operator may not create
//     tokenreviews or subjectaccessreviews, or the API server is out of
//     reach) gets 500, is logged, and is not cached.
package metricsauth
