package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// ErrNoMember: Requesters.Check was called with a context that carries no
// member (ClusterFrom is nil), outside a webhook RegisterWebhooks serves
// and a fleet Reconciler.
var ErrNoMember = errors.New("no member cluster in the context")

// defaultMemberAnswers is Requesters' requester.Options.CacheSize per
// member when it is 0: smaller than one cluster's default, since a fleet
// holds one cache per member.
const defaultMemberAnswers = 512

// Requesters checks the requester of an admission request against the
// RBAC of the member cluster the request came from: a requester.Checker
// per member, whose SubjectAccessReviews go to that member's API server
// with its client (Cluster.Client), never to another member's or the
// hub's. It is safe for concurrent use.
//
// A member's Checker is made at its first check and released when the
// member is disengaged; a member engaged again under the same name starts
// with a new one, since it may be another API server. Each holds at most
// requester.Options.CacheSize answers, so the fleet holds at most that
// many per engaged member.
type Requesters struct {
	opts requester.Options

	mu       sync.Mutex
	checkers map[*Cluster]*requester.Checker // of engaged members only
}

// NewRequesters returns Requesters whose Checkers are made with opts,
// except that CacheSize defaults to 512 per member. The operator's RBAC in
// each member must allow create on
// subjectaccessreviews.authorization.k8s.io. A negative field fails, as
// in requester.New.
func NewRequesters(opts requester.Options) (*Requesters, error) {
	if opts.TTL < 0 || opts.CacheSize < 0 || opts.MaxPermissions < 0 {
		return nil, fmt.Errorf("fleet: NewRequesters: requester.Options has a negative field (TTL %s, CacheSize %d, MaxPermissions %d): leave it 0 for its default", opts.TTL, opts.CacheSize, opts.MaxPermissions)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = defaultMemberAnswers
	}
	return &Requesters{opts: opts, checkers: map[*Cluster]*requester.Checker{}}, nil
}

// Check is requester.Checker's Check against the RBAC of the member in
// ctx (ClusterFrom): the member whose path an admission request came on,
// in a webhook RegisterWebhooks serves. A *requester.DeniedError names
// that member (DeniedError.Cluster). Without a member in ctx it fails
// with ErrNoMember: it never falls back to the hub's RBAC.
func (r *Requesters) Check(ctx context.Context, perms ...requester.Permission) error {
	c := ClusterFrom(ctx)
	if c == nil {
		return fmt.Errorf("fleet: check %d permissions: %w", len(perms), ErrNoMember)
	}
	ch, err := r.checker(c)
	if err != nil {
		return err
	}
	return inMember(ch.Check(ctx, perms...), c)
}

// CheckUser is requester.Checker's CheckUser against the RBAC of the
// member in ctx, as Check: for a fleet Reconciler that knows on whose
// behalf it acts in its request's member.
func (r *Requesters) CheckUser(ctx context.Context, user authenticationv1.UserInfo, perms ...requester.Permission) error {
	c := ClusterFrom(ctx)
	if c == nil {
		return fmt.Errorf("fleet: check %d permissions of user %q: %w", len(perms), user.Username, ErrNoMember)
	}
	ch, err := r.checker(c)
	if err != nil {
		return err
	}
	return inMember(ch.CheckUser(ctx, user, perms...), c)
}

// inMember names c in err if it is a *requester.DeniedError.
func inMember(err error, c *Cluster) error {
	if denied, ok := errors.AsType[*requester.DeniedError](err); ok {
		denied.Cluster = c.name
	}
	return err
}

// checker returns c's Checker, made if need be, or an error wrapping
// ErrNotEngaged once c is disengaged.
func (r *Requesters) checker(c *Cluster) (*requester.Checker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.checkers[c]; ok {
		return ch, nil
	}
	if c.life.Err() != nil {
		return nil, fmt.Errorf("fleet: check permissions in cluster %q: %w", c.name, ErrNotEngaged)
	}
	ch, err := requester.New(c.client, r.opts)
	if err != nil {
		return nil, fmt.Errorf("fleet: check permissions in cluster %q: %w", c.name, err)
	}
	r.checkers[c] = ch
	context.AfterFunc(c.life, func() { r.release(c) })
	return ch, nil
}

func (r *Requesters) release(c *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.checkers, c)
}

// held returns how many Checkers r holds.
func (r *Requesters) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.checkers)
}
