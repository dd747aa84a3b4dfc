package main

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The leader election flags set controller-runtime's options as the
// sample's set opkit's; a duration left at 0 is controller-runtime's
// default.
func TestLeaderFlags(t *testing.T) {
	// The fields apply sets (ctrl.Options has unexported ones cmp refuses).
	type election struct {
		Elect, Release                            bool
		Namespace, ID                             string
		LeaseDuration, RenewDeadline, RetryPeriod *time.Duration
	}
	for _, tt := range []struct {
		args []string
		want election
	}{
		{nil, election{ID: "mirror-operator", Release: true}},
		{[]string{"--leader-elect", "--leader-election-namespace", "ns", "--leader-election-id", "l",
			"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms"},
			election{Elect: true, Namespace: "ns", ID: "l", Release: true,
				LeaseDuration: ptr(3 * time.Second), RenewDeadline: ptr(2 * time.Second), RetryPeriod: ptr(500 * time.Millisecond)}},
		{[]string{"--leader-elect", "--leader-elect-renew-deadline", "2s"},
			election{Elect: true, ID: "mirror-operator", Release: true, RenewDeadline: ptr(2 * time.Second)}},
	} {
		f, err := parse(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var o ctrl.Options
		f.leader.apply(&o)
		got := election{o.LeaderElection, o.LeaderElectionReleaseOnCancel, o.LeaderElectionNamespace, o.LeaderElectionID, o.LeaseDuration, o.RenewDeadline, o.RetryPeriod}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("options of %q (-want +got):\n%s", tt.args, diff)
		}
	}
	if _, err := parse([]string{"--leader-elect-retry-period", "-1s"}, io.Discard); err == nil {
		t.Error("a negative duration was accepted")
	}
}

func ptr(d time.Duration) *time.Duration { return &d }
