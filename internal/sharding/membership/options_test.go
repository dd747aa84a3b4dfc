package membership_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// New refuses options that break the protocol, saying which field to fix.
func TestNewRefusesInvalidOptions(t *testing.T) {
	valid := membership.Options{Namespace: "ns", Slots: 8, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	for _, tc := range []struct {
		name  string
		tweak func(*membership.Options)
		says  string
	}{
		{"no namespace", func(o *membership.Options) { o.Namespace = "" }, "empty Namespace"},
		{"no slots", func(o *membership.Options) { o.Slots = 0 }, "invalid Slots 0"},
		{"bad identity", func(o *membership.Options) { o.Identity = "Host_1" }, "invalid Lease name"},
		{"deadline not below duration", func(o *membership.Options) {
			o.LeaseDuration, o.RenewDeadline = 5*time.Second, 5*time.Second
		}, "lower RenewDeadline"},
		{"tick not below deadline", func(o *membership.Options) {
			o.RenewDeadline, o.RetryPeriod = 3*time.Second, 3*time.Second
		}, "lower RetryPeriod"},
		{"negative", func(o *membership.Options) { o.RetryPeriod = -time.Second }, "RetryPeriod -1s: set each above 0"},
		{"no timings", func(o *membership.Options) { o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 0, 0, 0 }, "set each above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.tweak(&o)
			_, err := membership.New(env.Client(), o)
			if !errors.Is(err, membership.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("New = %v, want ErrInvalidOptions saying %q", err, tc.says)
			}
		})
	}
	if _, err := membership.New(env.Client(), valid); err != nil {
		t.Errorf("New(%+v) = %v", valid, err)
	}
}
