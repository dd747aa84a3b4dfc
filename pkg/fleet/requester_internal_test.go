package fleet

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// Requesters holds one Checker per engaged member, made at its first
// check and released when it is disengaged, however many members come and
// go; a member engaged again under its name gets a new one.
func TestRequestersReleaseDisengagedMembers(t *testing.T) {
	f, err := New(Options{ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRequesters(requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens there: making a Checker asks the API server nothing.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	const members = 200
	cancels := make([]context.CancelFunc, members)
	for i := range members {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		name := "m" + strconv.Itoa(i)
		if err := f.Engage(ctx, Member{Name: name, Config: cfg}); err != nil {
			t.Fatal(err)
		}
		c, err := f.Cluster(name)
		if err != nil {
			t.Fatal(err)
		}
		first, err := r.checker(c)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := r.checker(c); again != first {
			t.Fatalf("member %s: a second Checker", name)
		}
	}
	if got := r.held(); got != members {
		t.Fatalf("%d Checkers held, want %d", got, members)
	}

	old, _ := f.Cluster("m0")
	oldChecker, _ := r.checker(old)
	if err := f.Engage(t.Context(), Member{Name: "m0", Config: cfg}); err != nil { // replaces m0
		t.Fatal(err)
	}
	for _, cancel := range cancels {
		cancel()
	}
	waitHeld(t, r, 0)
	if _, err := r.checker(old); !errors.Is(err, ErrNotEngaged) {
		t.Errorf("checker of a disengaged member = %v, want ErrNotEngaged", err)
	}
	if got := r.held(); got != 0 {
		t.Errorf("a disengaged member's checker was kept: %d held", got)
	}
	renewed, _ := f.Cluster("m0")
	if ch, err := r.checker(renewed); err != nil || ch == oldChecker {
		t.Errorf("m0 engaged again: Checker %p, %v; want a new one (the old was %p)", ch, err, oldChecker)
	}
}

func waitHeld(t *testing.T, r *Requesters, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return r.held() == n, nil
	})
	if err != nil {
		t.Fatalf("Checkers held: %d, want %d: %v", r.held(), n, err)
	}
}
