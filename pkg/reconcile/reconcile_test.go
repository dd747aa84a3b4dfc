package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/reconcile"
)

func TestResult(t *testing.T) {
	tests := []struct {
		name         string
		r            reconcile.Result
		done         bool
		after        time.Duration
		priority     int
		havePriority bool
		str          string
	}{
		{name: "zero", r: reconcile.Result{}, done: true, str: "done"},
		{name: "Done", r: reconcile.Done(), done: true, str: "done"},
		{name: "RequeueAfter", r: reconcile.RequeueAfter(3 * time.Second), after: 3 * time.Second, str: "requeue after 3s"},
		{name: "RequeueAfter zero is done", r: reconcile.RequeueAfter(0), done: true, str: "done"},
		{name: "RequeueAfter negative is done", r: reconcile.RequeueAfter(-time.Second), done: true, str: "done"},
		{name: "RequeueWithBackoff", r: reconcile.RequeueWithBackoff(), str: "requeue with backoff"},
		{name: "RequeueWithBackoff WithPriority", r: reconcile.RequeueWithBackoff().WithPriority(2), priority: 2, havePriority: true, str: "requeue with backoff at priority 2"},
		{name: "WithPriority", r: reconcile.RequeueAfter(time.Minute).WithPriority(-100), after: time.Minute, priority: -100, havePriority: true, str: "requeue after 1m0s at priority -100"},
		{name: "Done WithPriority stays done", r: reconcile.Done().WithPriority(5), done: true, priority: 5, havePriority: true, str: "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.IsDone(); got != tt.done {
				t.Errorf("IsDone() = %v, want %v", got, tt.done)
			}
			after, requeue := tt.r.Requeue()
			if requeue == tt.done || after != tt.after {
				t.Errorf("Requeue() = %v, %v; want %v, %v", after, requeue, tt.after, !tt.done)
			}
			p, ok := tt.r.Priority()
			if p != tt.priority || ok != tt.havePriority {
				t.Errorf("Priority() = %d, %v; want %d, %v", p, ok, tt.priority, tt.havePriority)
			}
			if got := tt.r.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
}

func TestTerminal(t *testing.T) {
	if reconcile.Terminal(nil) != nil {
		t.Error("Terminal(nil) is not nil")
	}
	err := fmt.Errorf("reconcile widget: %w", reconcile.Terminal(fs.ErrInvalid))
	if !errors.Is(err, reconcile.ErrTerminal) {
		t.Error("errors.Is(err, ErrTerminal) = false for a wrapped Terminal error")
	}
	if !errors.Is(err, fs.ErrInvalid) {
		t.Error("Terminal hides the error it wraps from errors.Is")
	}
	if errors.Is(fs.ErrInvalid, reconcile.ErrTerminal) {
		t.Error("a plain error is terminal")
	}
	if got, want := err.Error(), "reconcile widget: terminal error: invalid argument"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRequestString(t *testing.T) {
	for _, tt := range []struct {
		r    reconcile.Request
		want string
	}{
		{reconcile.Request{Namespace: "ns", Name: "a"}, "ns/a"},
		{reconcile.Request{Name: "node-1"}, "node-1"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestFunc(t *testing.T) {
	var got reconcile.Request
	var r reconcile.Reconciler[reconcile.Request] = reconcile.Func[reconcile.Request](
		func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			got = req
			return reconcile.RequeueAfter(time.Second), nil
		})
	res, err := r.Reconcile(t.Context(), reconcile.Request{Namespace: "a", Name: "b"})
	if err != nil || res.IsDone() || got != (reconcile.Request{Namespace: "a", Name: "b"}) {
		t.Errorf("Func did not pass its call through: got %v, %v, %v", got, res, err)
	}
}
