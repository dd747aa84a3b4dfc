package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable time for a Fence. A test that moves it while another
// goroutine may read it (a Wait) uses add and get; t is for the rest.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFence(margin time.Duration) (*Fence, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	f := New("ns/lease", margin)
	f.now = c.now
	return f, c
}

func TestCheck(t *testing.T) {
	f, c := newFence(10 * time.Second)
	if err := f.Check(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "never acquired") {
		t.Errorf("before any renewal: Check = %v, want never acquired", err)
	}
	f.Renewed(c.t)
	if err := f.Check(); err != nil {
		t.Errorf("just renewed: Check = %v", err)
	}
	c.t = c.t.Add(10*time.Second - time.Nanosecond)
	if err := f.Check(); err != nil {
		t.Errorf("renewed just under the margin ago: Check = %v", err)
	}
	c.t = c.t.Add(time.Nanosecond)
	err := f.Check()
	if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "lease ns/lease") || !strings.Contains(err.Error(), "last renewed 10s ago") {
		t.Errorf("renewed the margin ago: Check = %v, want fenced, naming the lease and the age", err)
	}
	// A renewal sent before the last one (answered late) opens nothing.
	f.Renewed(c.t.Add(-20 * time.Second))
	if f.Open() {
		t.Error("an older renewal reopened the fence")
	}
	f.Renewed(c.t)
	if !f.Open() {
		t.Error("a renewal did not reopen the fence")
	}
	// The loss closes the fence at once; a renewal sent before it opens
	// nothing, the next acquisition does.
	f.Lost()
	if err := f.Check(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "lost") {
		t.Errorf("after the loss: Check = %v, want lost", err)
	}
	f.Renewed(c.t.Add(-time.Nanosecond))
	if f.Open() {
		t.Error("a renewal sent before the loss reopened the fence")
	}
	f.Renewed(c.t)
	if err := f.Check(); err != nil {
		t.Errorf("acquired again after the loss: Check = %v", err)
	}
}

// client-go v0.38's elector with Recovery calls OnStoppedLeading (Lost)
// at each loss, and resumes leading by a renewal alone, without a new
// OnStartedLeading: a repeated Lost keeps the fence closed, and only a
// renewal sent after the latest loss opens it.
func TestLostMoreThanOnce(t *testing.T) {
	f, c := newFence(10 * time.Second)
	f.Renewed(c.t)
	for range 2 {
		c.t = c.t.Add(time.Second)
		f.Lost()
		if err := f.Check(); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("after a loss: Check = %v, want lost", err)
		}
		f.Renewed(c.t.Add(-time.Nanosecond))
		if f.Open() {
			t.Fatal("a renewal sent before the latest loss reopened the fence")
		}
		c.t = c.t.Add(time.Second)
		f.Renewed(c.t) // the recovery's renewal
		if err := f.Check(); err != nil {
			t.Fatalf("renewed after the loss: Check = %v", err)
		}
	}
	f.Lost()
	f.Lost() // notified twice for one loss
	if f.Open() {
		t.Error("the fence opened at a repeated loss")
	}
	f.Renewed(c.t)
	if !f.Open() {
		t.Error("a renewal after a repeated loss did not reopen the fence")
	}
}

func TestWait(t *testing.T) {
	f, c := newFence(time.Second)
	f.Renewed(c.t)
	if err := f.Wait(t.Context()); err != nil {
		t.Fatalf("Wait on an open fence = %v", err)
	}
	c.t = c.t.Add(time.Hour)
	done := make(chan error, 1)
	go func() { done <- f.Wait(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("Wait on a closed fence returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.Renewed(c.t)
	if err := <-done; err != nil {
		t.Errorf("Wait after a renewal = %v", err)
	}

	// A loss does not end a Wait: the lease may be acquired again. (The
	// renewal is made too old first, so that the Wait waits whether it
	// starts before the loss or after.)
	c.add(time.Hour)
	go func() { done <- f.Wait(t.Context()) }()
	f.Lost()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v at the loss", err)
	case <-time.After(50 * time.Millisecond):
	}
	c.add(time.Second)
	f.Renewed(c.now())
	if err := <-done; err != nil {
		t.Errorf("Wait after the lease was acquired again = %v", err)
	}

	g, _ := newFence(time.Second)
	ctx, cancel := context.WithCancelCause(t.Context())
	stopped := errors.New("stopped")
	cancel(stopped)
	if err := g.Wait(ctx); !errors.Is(err, stopped) {
		t.Errorf("Wait with an ended context = %v, want its cause", err)
	}
}

// roundTripper counts the requests that reach it.
type roundTripper struct{ n atomic.Int32 }

func (r *roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	r.n.Add(1)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(""))}, nil
}

// body records whether it was closed.
type body struct {
	io.Reader
	closed bool
}

func (b *body) Close() error { b.closed = true; return nil }

func TestTransport(t *testing.T) {
	f, c := newFence(time.Second)
	f.Renewed(c.t)
	next := &roundTripper{}
	rt := Transport(next)
	fenced := NewContext(t.Context(), f)
	send := func(ctx context.Context, method string) (*body, error) {
		b := &body{Reader: strings.NewReader("{}")}
		req, err := http.NewRequestWithContext(ctx, method, "https://api/apis/x/v1/things", b)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return b, err
	}
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if _, err := send(fenced, m); err != nil {
			t.Errorf("%s with an open fence: %v", m, err)
		}
	}
	c.t = c.t.Add(time.Second)
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		b, err := send(fenced, m)
		if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), m+" /apis/x/v1/things refused") {
			t.Errorf("%s with a closed fence: %v, want refused", m, err)
		}
		if !b.closed {
			t.Errorf("%s refused without closing its body", m)
		}
		if _, err := send(t.Context(), m); err != nil {
			t.Errorf("%s without a fence in its context: %v", m, err)
		}
	}
	if _, err := send(fenced, "GET"); err != nil {
		t.Errorf("a read with a closed fence: %v", err)
	}
	if got, want := next.n.Load(), int32(5+4+1); got != want {
		t.Errorf("%d requests sent, want %d", got, want)
	}
}
