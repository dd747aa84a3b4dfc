package membership

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// Options with only the timings set get the documented defaults; the
// timings have none.
func TestDefaults(t *testing.T) {
	timed := Options{Namespace: "ns", Slots: 4, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	o, err := timed.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Options{Namespace: "ns", Slots: 4}).withDefaults(); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "set each above 0") {
		t.Errorf("zero timings: err = %v, want ErrInvalidOptions saying to set them", err)
	}
	if o.Group != DefaultGroup || o.Identity == "" || o.Clock == nil || o.Handler == nil {
		t.Errorf("defaults missing: %+v", o)
	}
	again, _ := timed.withDefaults()
	if again.Identity == o.Identity {
		t.Errorf("two default identities are both %q: a restarted process must join as a new member", o.Identity)
	}
}

// Claims round-trip; claims beyond Slots are left out; a value that does
// not parse makes the peer claim every slot.
func TestClaims(t *testing.T) {
	if got, _ := parseClaims(formatClaims([]int{5, 0, 3}), 8); !cmp.Equal(got, []int{0, 3, 5}) {
		t.Errorf("round trip = %v", got)
	}
	if got, _ := parseClaims("1,9", 8); !cmp.Equal(got, []int{1}) {
		t.Errorf("claims beyond Slots = %v, want [1]", got)
	}
	id := "x"
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationClaims: "1,two"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &id},
	}
	if p, ok := peerOf(l, 4); !ok || p.err == nil || !cmp.Equal(p.claims, []int{0, 1, 2, 3}) {
		t.Errorf("a peer whose claims do not parse = %+v, want every slot claimed and an error", p)
	}
}

// A peer is dead once its resourceVersion has not moved for LeaseDuration
// on the observer's clock, whatever its Lease says of time.
func TestLiveJudgesByResourceVersionOnObserverClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	m := &Member{opts: Options{LeaseDuration: 10 * time.Second, Clock: clk}, seen: map[string]sighting{}}
	ids := func(ps []peer) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.identity)
		}
		return out
	}
	look := func(rvA, rvB string) []string {
		return ids(m.live([]peer{{identity: "a", resourceVersion: rvA}, {identity: "b", resourceVersion: rvB}}, clk.Now()))
	}
	if got := look("1", "1"); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("first sight: live %v", got)
	}
	clk.Step(9 * time.Second)
	if got := look("2", "1"); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("after 9s: live %v", got)
	}
	clk.Step(time.Second)
	if got := look("2", "1"); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("b unchanged for 10s: live %v, want [a]", got)
	}
	clk.Step(time.Second)
	if got := look("2", "2"); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("b renewed again: live %v, want both", got)
	}
}

// The planner renews its plan on loads that have stayed uneven for a
// half-life: sustained times the run of a condition, and starts over
// each time it fails.
func TestSustainedTimesTheRun(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var c sustained
	for _, step := range []struct {
		at    time.Duration
		holds bool
		want  time.Duration
	}{
		{0, false, 0},
		{time.Second, true, 0},
		{5 * time.Second, true, 4 * time.Second},
		{6 * time.Second, false, 0},
		{7 * time.Second, true, 0},
		{22 * time.Second, true, 15 * time.Second},
	} {
		if got := c.lasted(step.holds, t0.Add(step.at)); got != step.want {
			t.Errorf("at %v, holds %v: lasted %v, want %v", step.at, step.holds, got, step.want)
		}
	}
}
