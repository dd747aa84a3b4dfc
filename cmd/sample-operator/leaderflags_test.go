package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// The leader election flags' defaults are the manager's; the Lease is
// released on a graceful stop.
func TestLeaderFlags(t *testing.T) {
	f, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := manager.LeaderElectionOptions{
		Name: "mirror-operator", ReleaseOnCancel: true, LeaseDuration: manager.DefaultLeaseDuration,
		RenewDeadline: manager.DefaultRenewDeadline, RetryPeriod: manager.DefaultRetryPeriod,
	}
	if diff := cmp.Diff(want, f.leader.options()); diff != "" {
		t.Errorf("leader election options without flags (-want +got):\n%s", diff)
	}
	f, err = parse([]string{"--leader-elect", "--leader-election-namespace", "ns", "--leader-election-id", "l",
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
		"--leader-elect-exit-on-loss"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = manager.LeaderElectionOptions{
		Enabled: true, Name: "l", Namespace: "ns", ReleaseOnCancel: true,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		ExitOnLoss: true,
	}
	if diff := cmp.Diff(want, f.leader.options()); diff != "" {
		t.Errorf("leader election options (-want +got):\n%s", diff)
	}
}

// The manager's errors about leader election options name the flags to
// change, and still unwrap to the manager's error.
func TestBadLeaderFlags(t *testing.T) {
	base := []string{"--webhook-port", "0", "--leader-elect"}
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--leader-election-id", ""}, "--leader-election-id is empty"},
		{nil, "--leader-election-namespace is empty and this process is not in a pod"},
		{[]string{"--leader-election-namespace", "ns", "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "3s"}, "--leader-elect-lease-duration (2s) must be longer than --leader-elect-renew-deadline (3s)"},
		{[]string{"--leader-election-namespace", "ns", "--leader-elect-renew-deadline", "1s", "--leader-elect-retry-period", "1s"}, "--leader-elect-renew-deadline (1s) must be longer than --leader-elect-retry-period (1s)"},
		{[]string{"--leader-election-namespace", "ns", "--leader-elect-retry-period", "-1s"}, "--leader-elect-retry-period is -1s"},
	} {
		// parse, then operate: run would set klog's global logger under
		// the informers earlier tests left running.
		f, err := parse(append(append([]string{}, base...), tt.args...), io.Discard)
		if err == nil {
			err = operate(t.Context(), &rest.Config{Host: "https://127.0.0.1:1"}, f, logr.Discard())
		}
		if err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.mention)
		}
		var fe flagError
		if !errors.As(err, &fe) || errors.Unwrap(fe) == nil {
			t.Errorf("run(%q): %v is no flag error unwrapping to the manager's", tt.args, err)
		}
	}
}
