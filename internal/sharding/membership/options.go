package membership

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
)

// DefaultGroup is the default of Options.Group. The timings have no
// defaults here: the manager passes its own (manager.DefaultLeaseDuration
// and the others), declared once there.
const DefaultGroup = "opkit-shard"

// ErrInvalidOptions is wrapped by New's error for options it refuses.
var ErrInvalidOptions = errors.New("invalid membership options")

// Options configure a Member. The zero value is valid except for Namespace
// and Slots.
type Options struct {
	// Namespace holds the members' Leases. Required.
	Namespace string
	// Group names the set of members sharing the slots: Leases are named
	// "<Group>-<Identity>" and labelled LabelGroup=<Group>. Defaults to
	// DefaultGroup.
	Group string
	// Identity names this member among the group; with Group it must make
	// a valid Lease name. Defaults to the lowercased host name and 8
	// random hex digits, so a restarted process is a new member.
	Identity string
	// Slots is the number of slots, 0..Slots-1, shared out. Required; all
	// members of a group must agree on it.
	Slots int
	// LeaseDuration is how long others wait, on their own clocks, after
	// this member's Lease last changed before they take its slots.
	// Required.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal a member
	// goes on dispatching; past it MayDispatch is false and the member
	// drops its claims. Must be less than LeaseDuration: the difference is
	// the margin for a reconcile in flight and for clock rate skew.
	// Required.
	RenewDeadline time.Duration
	// RetryPeriod is the tick: how often the member renews its Lease and
	// reads the others'. Must be less than RenewDeadline. Required.
	RetryPeriod time.Duration
	// Clock measures renewals, liveness and takeovers. Defaults to the
	// real clock.
	Clock clock.Clock
	// Handler hears of slots gained and lost. Defaults to one that does
	// nothing, so a released slot's claim is removed at once.
	Handler Handler
	// Logger logs joins, handovers and fencing. Defaults to logr.Discard().
	Logger logr.Logger
	// Report, when set, is called at each renewal, on the member's loop,
	// and its value written to AnnotationReport of the member's Lease, so
	// that every member reads it in View at no extra write. It must not
	// block. Defaults to nil: no annotation.
	Report func() string
	// LoadHalfLife, when above 0, balances the slots by load: the member
	// measures each held slot's load from ObserveLoad (the work of its
	// reconciles, decayed with this half-life), writes it to
	// AnnotationLoad at each renewal, and swaps slots with other members
	// (Balance) once the busiest member's load has exceeded the mean by
	// more than DefaultBalanceTrigger for a half-life, down to
	// DefaultBalanceTolerance, when they keep a tenth of a worker busy
	// each on average. Every member of a group must set the same.
	// Defaults to 0: slots are balanced by count only.
	LoadHalfLife time.Duration
}

// withDefaults returns o with defaults filled in, or an error wrapping
// ErrInvalidOptions that says which field to fix.
func (o Options) withDefaults() (Options, error) {
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = strings.ToLower(host) + "-" + uuid.NewString()[:8]
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Handler == nil {
		o.Handler = HandlerFuncs{}
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o, o.validate()
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("empty Namespace: set it to the namespace the members' Leases live in (the pod's own)"))
	}
	if o.Slots <= 0 {
		errs = append(errs, fmt.Errorf("invalid Slots %d: set it to the number of slots, at least 1 and the same for every member", o.Slots))
	}
	if msgs := validation.IsDNS1123Subdomain(leaseName(o.Group, o.Identity)); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("invalid Lease name %q from Group and Identity (%s): use lowercase letters, digits and '-'", leaseName(o.Group, o.Identity), strings.Join(msgs, "; ")))
	}
	if o.LoadHalfLife < 0 {
		errs = append(errs, fmt.Errorf("invalid LoadHalfLife %v: set it to 0 (balance by count) or above", o.LoadHalfLife))
	}
	switch {
	case o.LeaseDuration <= 0 || o.RenewDeadline <= 0 || o.RetryPeriod <= 0:
		errs = append(errs, fmt.Errorf("LeaseDuration %v, RenewDeadline %v, RetryPeriod %v: set each above 0 (the manager passes manager.DefaultLeaseDuration and the others)", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
	case o.RenewDeadline >= o.LeaseDuration:
		errs = append(errs, fmt.Errorf("renew deadline: RenewDeadline %v is not less than LeaseDuration %v: a member could dispatch after others took its slots; lower RenewDeadline", o.RenewDeadline, o.LeaseDuration))
	case o.RetryPeriod >= o.RenewDeadline:
		errs = append(errs, fmt.Errorf("retry period: RetryPeriod %v is not less than RenewDeadline %v: one late tick would fence the member; lower RetryPeriod", o.RetryPeriod, o.RenewDeadline))
	}
	if len(errs) > 0 {
		return fmt.Errorf("membership: %w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

func leaseName(group, identity string) string { return group + "-" + identity }
