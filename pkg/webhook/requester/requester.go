package requester

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Permission is one request the operator will make on the requester's
// behalf: a verb on a resource, in a namespace ("" for cluster-scoped
// resources and for every namespace), by name ("" for every name, and for
// create). It is the SubjectAccessReview's ResourceAttributes, so
// Subresource, Version and field or label selectors can be asked too.
type Permission = authorizationv1.ResourceAttributes

// Options configure a Checker. The zero value is valid.
type Options struct {
	// TTL is how long an answer of the API server is reused for the same
	// user and permission, allowed or denied. Longer spares the API server
	// and admission latency; shorter makes a revoked or granted permission
	// count sooner. Defaults to 10s.
	TTL time.Duration
	// CacheSize bounds the answers kept; the least recently used go first.
	// Defaults to 4096.
	CacheSize int
	// MaxPermissions bounds the distinct permissions one Check may ask:
	// each costs a SubjectAccessReview, and the request that asks them
	// comes from the user being checked. More are refused with a message
	// saying so. Defaults to 256.
	MaxPermissions int
	// Clock tells the time for the TTL. Defaults to the real clock.
	Clock clock.PassiveClock
}

// Defaults of Options, which the fields' docs state.
const (
	defaultTTL            = 10 * time.Second
	defaultCacheSize      = 4096
	defaultMaxPermissions = 256
)

// parallelReviews bounds the SubjectAccessReviews one Check has in flight.
const parallelReviews = 8

// Checker asks the API server whether a user may do what an object asks
// the operator to do on their behalf. It is safe for concurrent use.
type Checker struct {
	client client.Client
	opts   Options
	// answers maps a hash of (user, permission) to its allowed bool.
	answers *cache.LRUExpireCache
}

// New returns a Checker that creates SubjectAccessReviews with c, such as
// the manager's UncachedClient(); the operator's RBAC must allow create on
// subjectaccessreviews.authorization.k8s.io.
func New(c client.Client, opts Options) (*Checker, error) {
	if c == nil {
		return nil, errors.New("requester: New needs a client, such as the manager's UncachedClient()")
	}
	if opts.TTL < 0 || opts.CacheSize < 0 || opts.MaxPermissions < 0 {
		return nil, fmt.Errorf("requester: Options has a negative field (TTL %s, CacheSize %d, MaxPermissions %d): leave it 0 for its default", opts.TTL, opts.CacheSize, opts.MaxPermissions)
	}
	if opts.TTL == 0 {
		opts.TTL = defaultTTL
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = defaultCacheSize
	}
	if opts.MaxPermissions == 0 {
		opts.MaxPermissions = defaultMaxPermissions
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Checker{client: c, opts: opts, answers: cache.NewLRUExpireCacheWithClock(opts.CacheSize, opts.Clock)}, nil
}

// ErrNoRequest: Check was called with a context that carries no admission
// request, outside an admission webhook's Defaulter or Validator.
var ErrNoRequest = errors.New("no admission request in the context")

// Check returns nil if the user who sent the admission request in ctx may
// do every one of perms, and otherwise a *DeniedError naming the user, the
// object of the request and each permission they lack, which refuses the
// request with 403 Forbidden when a Defaulter or Validator returns it.
// Call it from a Defaulter or Validator of package webhook, whose context
// carries the request.
//
// The user is the one the AdmissionRequest names: the API server's word,
// worth what the webhook server's caller authentication is worth (see
// docs/security.md).
func (c *Checker) Check(ctx context.Context, perms ...Permission) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return fmt.Errorf("requester: check %d permissions: %w", len(perms), ErrNoRequest)
	}
	err = c.CheckUser(ctx, req.UserInfo, perms...)
	var denied *DeniedError
	if errors.As(err, &denied) {
		denied.Resource, denied.Name = req.Resource.Resource, req.Name
		if req.Resource.Group != "" {
			denied.Resource += "." + req.Resource.Group
		}
	}
	return err
}

// CheckUser is Check for user, outside an admission request: a reconciler
// that knows on whose behalf it acts, say.
func (c *Checker) CheckUser(ctx context.Context, user authenticationv1.UserInfo, perms ...Permission) error {
	perms = distinct(perms)
	if len(perms) > c.opts.MaxPermissions {
		return &DeniedError{User: user.Username, TooMany: len(perms), Max: c.opts.MaxPermissions}
	}
	allowed := make([]bool, len(perms))
	errs := make([]error, len(perms))
	sem := make(chan struct{}, parallelReviews)
	var wg sync.WaitGroup
	for i := range perms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			allowed[i], errs[i] = c.allowed(ctx, user, perms[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("requester: cannot check the permissions of user %q: %w", user.Username, err)
	}
	var missing []Permission
	for i, ok := range allowed {
		if !ok {
			missing = append(missing, perms[i])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &DeniedError{User: user.Username, Missing: missing}
}

// allowed asks, or remembers, whether user may do p.
func (c *Checker) allowed(ctx context.Context, user authenticationv1.UserInfo, p Permission) (bool, error) {
	key := cacheKey(user, p)
	if v, ok := c.answers.Get(key); ok {
		return v.(bool), nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	attrs := p
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}
	if err := c.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("create a SubjectAccessReview for %s (does the operator's RBAC allow create on subjectaccessreviews?): %w", describe(p), err)
	}
	c.answers.Add(key, sar.Status.Allowed, c.opts.TTL)
	return sar.Status.Allowed, nil
}

// cacheKey hashes everything a SubjectAccessReview's answer depends on,
// so that an entry costs the same however many groups a user has.
func cacheKey(user authenticationv1.UserInfo, p Permission) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	field(user.Username)
	field(user.UID)
	groups := slices.Sorted(slices.Values(user.Groups))
	field(fmt.Sprint(len(groups)))
	for _, g := range groups {
		field(g)
	}
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	field(fmt.Sprint(len(keys)))
	for _, k := range keys {
		field(k)
		field(fmt.Sprint(len(user.Extra[k])))
		for _, v := range user.Extra[k] {
			field(v)
		}
	}
	field(permKey(p))
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// permKey is p as JSON, which holds every field and writes them in one
// order.
func permKey(p Permission) string {
	b, _ := json.Marshal(p) // a struct of strings and slices: never fails
	return string(b)
}

// distinct returns perms without repeats, in their first order.
func distinct(perms []Permission) []Permission {
	seen := make(map[string]bool, len(perms))
	out := make([]Permission, 0, len(perms))
	for _, p := range perms {
		if k := permKey(p); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// DeniedError says which permissions the requester lacks. It is an API
// status (apierrors.IsForbidden is true), so a Defaulter or Validator that
// returns it refuses the request with 403 and its message.
type DeniedError struct {
	// User is the requester's name.
	User string
	// Resource and Name are the admission request's, such as
	// "mirrors.samples.opkit.dev" and "ca-bundle"; "" from CheckUser.
	Resource, Name string
	// Cluster names the member cluster whose RBAC was asked, when the
	// Checker asks a member's API server (package fleet's Requesters);
	// "" for the operator's own cluster.
	Cluster string
	// Missing are the permissions User lacks, in the order asked.
	Missing []Permission
	// TooMany, when not 0, is how many permissions the check would have
	// asked, more than Max: nothing was asked.
	TooMany, Max int
}

var _ interface {
	error
	Status() metav1.Status
} = (*DeniedError)(nil)

func (e *DeniedError) Error() string {
	var b strings.Builder
	if e.Resource != "" {
		fmt.Fprintf(&b, "%s %q is forbidden", e.Resource, e.Name)
		if e.Cluster != "" {
			fmt.Fprintf(&b, " in member cluster %q", e.Cluster)
		}
		b.WriteString(": ")
	} else if e.Cluster != "" {
		fmt.Fprintf(&b, "in member cluster %q: ", e.Cluster)
	}
	if e.TooMany > 0 {
		fmt.Fprintf(&b, "it asks the operator to act in %d ways on behalf of user %q, more than the %d it checks: ask for less, such as fewer namespaces", e.TooMany, e.User, e.Max)
		return b.String()
	}
	parts := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		parts[i] = describe(p)
	}
	fmt.Fprintf(&b, "user %q may not %s, which it asks the operator to do on their behalf: ask for that permission (RBAC) or ask for less", e.User, strings.Join(parts, ", nor "))
	return b.String()
}

// Status makes e an API status: 403 Forbidden with e's message.
func (e *DeniedError) Status() metav1.Status {
	return metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: e.Error(),
	}
}

// describe says p as kubectl auth can-i would ask it: 'get secrets
// "ops-only" in namespace "team-a"'.
func describe(p Permission) string {
	var b strings.Builder
	b.WriteString(p.Verb)
	b.WriteString(" ")
	b.WriteString(p.Resource)
	if p.Subresource != "" {
		b.WriteString("/" + p.Subresource)
	}
	if p.Group != "" {
		b.WriteString("." + p.Group)
	}
	if p.Name != "" {
		fmt.Fprintf(&b, " %q", p.Name)
	}
	if p.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %q", p.Namespace)
	} else {
		b.WriteString(" cluster-wide")
	}
	return b.String()
}
