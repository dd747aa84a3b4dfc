package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/sharding"
)

// Every invalid sharding option fails New with an error naming the field
// and what to set.
func TestShardingOptionsValidated(t *testing.T) {
	ns := env.Namespace(t)
	ok := manager.ShardingOptions{Enabled: true, Group: "valid", Namespace: ns}
	with := func(f func(*manager.ShardingOptions)) manager.ShardingOptions {
		so := ok
		f(&so)
		return so
	}
	for _, tc := range []struct {
		name string
		so   manager.ShardingOptions
		want string
		is   error
	}{
		{"no group", with(func(so *manager.ShardingOptions) { so.Group = "" }), "Options.Sharding.Group is empty: name the replicas' group", nil},
		{"slots not a power of two", with(func(so *manager.ShardingOptions) { so.Slots = 48 }), "Options.Sharding.Slots", sharding.ErrInvalidSlots},
		{"too many slots", with(func(so *manager.ShardingOptions) { so.Slots = 2048 }), "Options.Sharding.Slots", sharding.ErrInvalidSlots},
		{"negative slots", with(func(so *manager.ShardingOptions) { so.Slots = -4 }), "Options.Sharding.Slots is -4", nil},
		{"negative lease duration", with(func(so *manager.ShardingOptions) { so.LeaseDuration = -time.Second }), "Options.Sharding.LeaseDuration is -1s", nil},
		{"negative renew deadline", with(func(so *manager.ShardingOptions) { so.RenewDeadline = -time.Second }), "Options.Sharding.RenewDeadline is -1s", nil},
		{"negative retry period", with(func(so *manager.ShardingOptions) { so.RetryPeriod = -time.Second }), "Options.Sharding.RetryPeriod is -1s", nil},
		{"renew deadline not under lease duration", with(func(so *manager.ShardingOptions) { so.RenewDeadline = 15 * time.Second }),
			"Options.Sharding.LeaseDuration (15s) must be longer than RenewDeadline (15s)", nil},
		{"retry period not under renew deadline", with(func(so *manager.ShardingOptions) { so.RetryPeriod = 10 * time.Second }),
			"Options.Sharding.RenewDeadline (10s) must be longer than RetryPeriod (10s)", nil},
		{"identity not a Lease name", with(func(so *manager.ShardingOptions) { so.Identity = "Host_1" }), "invalid Lease name \"valid-Host_1\"", membership.ErrInvalidOptions},
		{"negative balance half-life", with(func(so *manager.ShardingOptions) {
			so.Balance = manager.BalanceOptions{Enabled: true, HalfLife: -time.Minute}
		}),
			"Options.Sharding.Balance.HalfLife is -1m0s: it must be 0 (the default, 1m0s) or positive", nil},
		{"no namespace outside a pod", with(func(so *manager.ShardingOptions) { so.Namespace = "" }), "Options.Sharding.Namespace is empty and this process is not in a pod", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manager.New(env.Config(), manager.Options{Sharding: tc.so, Metrics: manager.MetricsOptions{BindAddress: "0"}})
			if err == nil {
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v\nwant it to contain %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("New: %v: not errors.Is %v", err, tc.is)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		if _, err := manager.New(env.Config(), manager.Options{Sharding: ok, Metrics: manager.MetricsOptions{BindAddress: "0"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("off ignores the rest", func(t *testing.T) {
		so := with(func(so *manager.ShardingOptions) { so.Enabled, so.Group, so.Slots = false, "", 3 })
		if _, err := manager.New(env.Config(), manager.Options{Sharding: so, Metrics: manager.MetricsOptions{BindAddress: "0"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// The sharded mode sets each controller's gate: one set by hand is an
// error, not silently replaced.
func TestShardingRefusesOwnGate(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{Sharding: manager.ShardingOptions{Enabled: true, Group: "gate", Namespace: ns}})
	_, err := manager.NewController(m, "gated", reconcile.Func[reconcile.Request](func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Done(), nil
	}), manager.For[*corev1.ConfigMap](nil), manager.WithOptions(controller.Options[reconcile.Request]{Gate: admitAll{}}))
	if err == nil || !strings.Contains(err.Error(), "Options.Gate is set") {
		t.Errorf("NewController with Options.Gate in sharded mode: %v, want an error naming Options.Gate", err)
	}
}

type admitAll struct{}

func (admitAll) Admit(reconcile.Request, int) (controller.Verdict, func(bool)) {
	return controller.Admit, func(bool) {}
}
