package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// The sharding flags' defaults are the manager's, but the identity, which
// is the pod's name when the Deployment passes it (config/sharded).
func TestShardFlagDefaults(t *testing.T) {
	t.Setenv("POD_NAME", "mirror-7d9-x2k")
	f, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := manager.ShardingOptions{
		Identity: "mirror-7d9-x2k", Slots: manager.DefaultSlots, LeaseDuration: manager.DefaultLeaseDuration,
		RenewDeadline: manager.DefaultRenewDeadline, RetryPeriod: manager.DefaultRetryPeriod,
	}
	if diff := cmp.Diff(want, f.shard.options()); diff != "" {
		t.Errorf("sharding options without --shard-group (-want +got):\n%s", diff)
	}
	f, err = parse([]string{"--shard-group", "mirror-operator", "--shard-slots", "16", "--shard-lease-duration", "4s",
		"--shard-renew-deadline", "3s", "--shard-retry-period", "500ms", "--shard-namespace", "ns", "--shard-identity", "a",
		"--shard-autoscale-deployment", "mirror-controller-manager", "--shard-autoscale-queue-latency", "10ms", "--shard-autoscale-max-replicas", "5",
		"--shard-autoscale-up-cooldown", "5s", "--shard-autoscale-down-cooldown", "8s", "--shard-autoscale-interval", "1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = manager.ShardingOptions{
		Enabled: true, Group: "mirror-operator", Namespace: "ns", Identity: "a", Slots: 16,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Autoscale: manager.AutoscaleOptions{Enabled: true, Name: "mirror-controller-manager", QueueLatency: 10 * time.Millisecond, MaxReplicas: 5,
			UpCooldown: 5 * time.Second, DownCooldown: 8 * time.Second, Interval: time.Second},
	}
	if diff := cmp.Diff(want, f.shard.options()); diff != "" {
		t.Errorf("sharding options (-want +got):\n%s", diff)
	}
	t.Setenv("POD_NAME", "")
	if f, err := parse(nil, io.Discard); err != nil || f.shard.identity != "" {
		t.Errorf("without POD_NAME: identity %q, %v; want empty, the manager's default", f.shard.identity, err)
	}
}

// The manager's errors about sharding options name the flags to change,
// and still unwrap to the manager's error.
func TestBadShardFlags(t *testing.T) {
	base := []string{"--webhook-port", "0", "--shard-namespace", "ns"}
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--shard-group", "g", "--leader-elect"}, "--leader-elect and --shard-group exclude each other"},
		{[]string{"--shard-group", "g", "--shard-slots", "3"}, "--shard-slots: invalid slots"},
		{[]string{"--shard-group", "g", "--shard-lease-duration", "2s", "--shard-renew-deadline", "3s"}, "--shard-lease-duration (2s) must be longer than --shard-renew-deadline (3s)"},
		{[]string{"--shard-group", "g", "--shard-renew-deadline", "1s", "--shard-retry-period", "1s"}, "--shard-renew-deadline (1s) must be longer than --shard-retry-period (1s)"},
		{[]string{"--shard-group", "g", "--shard-retry-period", "-1s"}, "--shard-retry-period is -1s"},
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
		if errors.As(err, &fe) && errors.Unwrap(fe) == nil {
			t.Errorf("run(%q): the flag error does not unwrap to the manager's", tt.args)
		}
	}
}

// docs/sharding.md lists every sharding flag with its default.
func TestShardFlagsDocumented(t *testing.T) {
	t.Setenv("POD_NAME", "")
	doc, err := os.ReadFile("../../docs/sharding.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var s shardFlags
	s.register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "|") && strings.Contains(line, "| `--"+fl.Name+"` |") {
				row = line
			}
		}
		switch {
		case row == "":
			t.Errorf("docs/sharding.md has no row for --%s", fl.Name)
		case fl.DefValue != "" && !strings.Contains(row, "`"+fl.DefValue+"`"):
			t.Errorf("docs/sharding.md gives --%s a default other than %s: %s", fl.Name, fl.DefValue, row)
		}
	})
}
