package budget

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/opkit-dev/opkit/internal/queueaccess"
)

// Prepaid is a worker's pre-paid token: package controller's worker, while
// the budget is limited, waits for a token of its controller's flow in the
// reconcile lane before it takes its next key (Acquire, called by the
// queue once a key is ready: see queueaccess.Queue), so that it waits with
// no key in hand while the keys wait in the queue, in the queue's order.
// The first request of the reconcile that follows, sent through the
// Budget's Transport in the reconcile lane under the controller, with a
// context that answers PrepaidKey with this Prepaid, goes on the token
// instead of waiting again; Release, when the reconcile ends, gives the
// token back to the bucket if no request spent it.
//
// A worker keeps one Prepaid for all its keys. Its methods are safe for
// concurrent use: a reconcile's requests may race for the token, and one
// wins it.
type Prepaid struct {
	b          *Budget
	controller string
	held       atomic.Bool // a token is granted and not yet spent or given back
	// room is whether the worker holds a room in the window of requests
	// in flight, reserved while the window is narrowed, that no request
	// has spent yet.
	room atomic.Bool
}

var _ queueaccess.Permit = (*Prepaid)(nil)

// PrepaidKey is the context key under which a reconcile's context carries
// its worker's *Prepaid: package controller's reconcile context answers it.
type PrepaidKey struct{}

// Prepay returns a worker's Prepaid for controller's flow in the reconcile
// lane, holding no token.
func (b *Budget) Prepay(controller string) *Prepaid {
	if controller == "" {
		controller = Unattributed
	}
	return &Prepaid{b: b, controller: controller}
}

// Acquire waits for a token as a request of the reconcile lane under the
// controller waits (Wait: by lane, and by the controller's share among
// controllers) and holds it; it returns nil at once if it holds one. If ctx
// ends first it returns an error wrapping its cause, holding nothing. The
// wait counts in the budget's wait and canceled metrics like a request's;
// the token counts as let through once a request spends it.
//
// While priority and fairness's 429s have narrowed the window of requests
// in flight, it then waits for room in the window too, and reserves it
// for the reconcile's first request: the worker, not the request, waits
// for the server's seats, and the key it takes next is the one first in
// the queue when there is room. The room holds up only other workers,
// never a request (see window.reserve).
func (p *Prepaid) Acquire(ctx context.Context) error {
	if !p.held.Load() {
		waited, err := p.b.wait(ctx, LaneReconcile, p.controller)
		if err != nil {
			return err
		}
		p.b.metrics().waited(LaneReconcile, p.controller, waited)
		p.held.Store(true)
	}
	if !p.room.Load() && p.b.win.Narrowed() {
		if err := p.b.win.reserve(ctx, p.b.clock.Now); err != nil {
			return fmt.Errorf("wait for room among the requests in flight: %w", err)
		}
		p.room.Store(true)
	}
	return nil
}

// Release gives the token back to the bucket, and the room back to the
// window, unless a request spent them or none is held. A nil Prepaid
// holds none.
func (p *Prepaid) Release() {
	if p == nil {
		return
	}
	if p.held.Load() && p.held.CompareAndSwap(true, false) {
		p.b.giveBack()
	}
	if p.room.Swap(false) {
		p.b.win.unreserve()
	}
}

// spend reports whether a request of lane and controller, sent with ctx
// through b, goes on the token its worker pre-paid, and if so spends it.
func (b *Budget) spend(ctx context.Context, lane Lane, controller string) bool {
	if lane != LaneReconcile {
		return false
	}
	p, _ := ctx.Value(PrepaidKey{}).(*Prepaid)
	if p == nil || p.b != b || p.controller != controller || !p.held.CompareAndSwap(true, false) {
		return false
	}
	b.metrics().granted(lane, controller, 0)
	return true
}

// spendRoom reports whether a request of lane and controller, sent with
// ctx through b, goes in the room its worker reserved (see Acquire), and
// if so takes it.
func (b *Budget) spendRoom(ctx context.Context, lane Lane, controller string) bool {
	if lane != LaneReconcile {
		return false
	}
	p, _ := ctx.Value(PrepaidKey{}).(*Prepaid)
	return p != nil && p.b == b && p.controller == controller && p.room.Swap(false)
}

type budgetKey struct{}

// NewContext returns ctx carrying b: the manager starts its controllers
// with it, and their workers pre-pay their reconciles' first requests
// from b (see Prepaid).
func NewContext(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// FromContext returns the Budget ctx carries, or nil.
func FromContext(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}
