package membership

import "context"

// Handler hears of the slots a Member gains and loses. This is how a
// manager learns to start dispatching a slot's keys (after its caches
// synced) and to stop and drain them.
type Handler interface {
	// Held is called once slots became held: MayDispatch is already true
	// for them. It is called on the member's loop, so it must not block;
	// the member does not renew while it runs.
	Held(slots []int)
	// Release is called once slots stopped being dispatchable (MayDispatch
	// is already false for them), because they moved to another member,
	// because this member fenced itself, or because it is leaving. It must
	// return only when no reconcile of those slots is in flight: the
	// member removes its claims when it returns, and another member may
	// then take them at once. It runs on a goroutine of its own and may
	// block; the member keeps renewing (and claiming the slots) meanwhile.
	// ctx is never cancelled by the member, including on leave.
	Release(ctx context.Context, slots []int)
}

// HandlerFuncs is a Handler made of functions; a nil function does
// nothing.
type HandlerFuncs struct {
	OnHeld    func(slots []int)
	OnRelease func(ctx context.Context, slots []int)
}

var _ Handler = HandlerFuncs{}

// Held calls OnHeld.
func (h HandlerFuncs) Held(slots []int) {
	if h.OnHeld != nil {
		h.OnHeld(slots)
	}
}

// Release calls OnRelease.
func (h HandlerFuncs) Release(ctx context.Context, slots []int) {
	if h.OnRelease != nil {
		h.OnRelease(ctx, slots)
	}
}
