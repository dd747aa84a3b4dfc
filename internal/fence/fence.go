// Package fence answers, for a process that holds a lease, "may I still
// act?": yes only while its last successful renewal is younger than a
// margin shorter than the lease, on the monotonic clock. The manager's
// leader election keeps one Fence, puts it in the context of every
// leader-only runnable, and refuses at the transport every write sent with
// such a context while the fence is closed; controllers wait at it before
// each reconcile.
//
// Why the margin bounds the overlap: a standby counts the lease's duration
// from when it saw the holder's last renewal, which it cannot see before
// the renewal was sent; the fence measures from just before it was sent.
// So the fence closes at least lease - margin before any standby may
// acquire, provided the two processes' clocks run at about the same rate.
package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// ErrFenced is wrapped by the error of every write refused, and every
// Check that fails, because this process is not sure it still holds its
// lease.
var ErrFenced = errors.New("not sure this process still holds its lease")

// Fence is the state of one lease as its holder knows it. The zero value
// is not usable; use New. Its methods are safe for concurrent use.
type Fence struct {
	lease  string        // namespace/name, for errors
	margin time.Duration // how long a renewal lets the holder act
	now    func() time.Time

	mu      sync.Mutex
	renewed time.Time     // when the last successful renewal was sent; zero: never
	lost    time.Time     // when the lease was last lost; zero: never
	changed chan struct{} // closed and replaced at each renewal and at each loss
}

// New returns a closed Fence for the lease (namespace/name, for errors)
// that each renewal opens for margin.
func New(lease string, margin time.Duration) *Fence {
	return &Fence{lease: lease, margin: margin, now: time.Now, changed: make(chan struct{})}
}

// Renewed records a successful renewal (or acquisition) sent at sent
// (read from time.Now just before the request, so that it carries a
// monotonic reading). One sent before the last loss opens nothing.
func (f *Fence) Renewed(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.Before(f.renewed) || sent.Before(f.lost) {
		return
	}
	f.renewed = sent
	close(f.changed)
	f.changed = make(chan struct{})
}

// Lost closes the fence at once, until a renewal sent after this call:
// the lease is gone, and only acquiring it again opens the fence. Calling
// it again, for the same loss or a later one, only moves that point on:
// client-go v0.38's elector with Recovery calls OnStoppedLeading at each
// loss and resumes by a renewal alone.
func (f *Fence) Lost() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = f.now()
	f.renewed = time.Time{}
	close(f.changed)
	f.changed = make(chan struct{})
}

// Check returns nil if the holder may act now, else an error wrapping
// ErrFenced that says why.
func (f *Fence) Check() error {
	_, err := f.check(f.now())
	return err
}

// CheckAt is Check as of now, a reading of time.Now (with its monotonic
// clock) that the caller also uses to date what it is about to do: what
// it records as done at now was allowed at now, however long the process
// is paused between this call and the record.
func (f *Fence) CheckAt(now time.Time) error {
	_, err := f.check(now)
	return err
}

func (f *Fence) check(now time.Time) (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.renewed.IsZero() && !f.lost.IsZero():
		return f.changed, fmt.Errorf("lease %s: %w: it was lost %v ago and not acquired since",
			f.lease, ErrFenced, now.Sub(f.lost).Round(time.Millisecond))
	case f.renewed.IsZero():
		return f.changed, fmt.Errorf("lease %s: %w: it was never acquired", f.lease, ErrFenced)
	}
	if age := now.Sub(f.renewed); age >= f.margin {
		return f.changed, fmt.Errorf("lease %s: %w: last renewed %v ago, and a standby may take it over once more than the renew deadline (%v) has passed",
			f.lease, ErrFenced, age.Round(time.Millisecond), f.margin)
	}
	return f.changed, nil
}

// Open reports whether the holder may act now.
func (f *Fence) Open() bool { return f.Check() == nil }

// Wait blocks until the holder may act, and returns nil, or until ctx
// ends, and returns its cause. A lost lease does not end it: the holder
// may acquire the lease again.
func (f *Fence) Wait(ctx context.Context) error {
	for {
		changed, err := f.check(f.now())
		if err == nil {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

type key struct{}

// NewContext returns ctx carrying f: writes sent with it through a
// Transport are refused while f is closed.
func NewContext(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// FromContext returns the Fence ctx carries, or nil.
func FromContext(ctx context.Context) *Fence {
	f, _ := ctx.Value(key{}).(*Fence)
	return f
}

// Check returns nil if ctx carries no Fence or an open one, else an error
// wrapping ErrFenced.
func Check(ctx context.Context) error {
	if f := FromContext(ctx); f != nil {
		return f.Check()
	}
	return nil
}

// Transport wraps rt so that a write (any method but GET, HEAD and
// OPTIONS) whose request context carries a closed Fence is refused before
// it is sent, with an error wrapping ErrFenced. It is a transport
// middleware for rest.Config.Wrap: every client built from that config
// checks the fence as late as it can, just before the wire.
func Transport(rt http.RoundTripper) http.RoundTripper { return transport{next: rt} }

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := Check(req.Context()); err != nil {
			closeBody(req.Body)
			return nil, fmt.Errorf("%s %s refused: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.next.RoundTrip(req)
}

// closeBody closes a refused request's body, as a RoundTripper must.
func closeBody(b io.ReadCloser) {
	if b != nil {
		_ = b.Close()
	}
}

// WrappedTransport returns the transport Transport wraps, so that client-go
// can see through it (for example to close idle connections).
func (t transport) WrappedTransport() http.RoundTripper { return t.next }
