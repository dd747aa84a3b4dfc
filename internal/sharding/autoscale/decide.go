package autoscale

import (
	"math"
	"time"
)

// Policy is what Decide scales for, and how fast.
type Policy struct {
	// Objective is the queue wait that each replica's p99 should stay
	// within.
	Objective time.Duration
	// Min and Max bound the replica count; 1 ≤ Min ≤ Max ≤ the slots.
	Min, Max int
	// MaxStep is the most replicas one scale-up adds.
	MaxStep int
	// UpCooldown is how long after the last scale (or after this replica
	// began deciding) a scale-up waits.
	UpCooldown time.Duration
	// DownCooldown is how long every replica must have been calm, and
	// how long after the last scale, before a scale-down by one; and how
	// long a count of live members that differs from the replicas asked
	// for holds every decision.
	DownCooldown time.Duration
	// Rest is how long slots must have rested before a load is judged:
	// a replica that gains slots queues all their keys at once, so the
	// windows around a move see waits that say nothing of the load.
	Rest time.Duration
}

// downBusy is the most the replicas left after a scale-down may be busy,
// on average, measured by the work done now: room for bursts, so that a
// scale-down is not undone at the next window.
const downBusy = 0.6

// Input is what one decision sees.
type Input struct {
	Now time.Time
	// Replicas is the scale's spec.replicas.
	Replicas int
	// Loads holds each live member's Load, by identity; nil for a member
	// that published none it could read.
	Loads map[string]*Load
	// Settled is false while slots move among the members.
	Settled bool
}

// State is what Decide carries from one decision to the next.
type State struct {
	// Since is when this replica last scaled or began deciding.
	Since time.Time
	// CalmSince is when every member last became calm (each p99 within
	// half the Objective, and the work fitting one replica fewer); zero
	// while one is not.
	CalmSince time.Time
	// ApartSince is when the live members' count last began to differ
	// from Replicas; zero while it does not.
	ApartSince time.Time
	// RestingSince is when slots last came to rest; zero while they move.
	RestingSince time.Time
}

// Reasons a Decision gives. The scaling ones label ShardingScales.
const (
	ReasonLatency = "queue_latency" // up: a replica's p99 is over the objective
	ReasonCalm    = "calm"          // down: every replica calm for DownCooldown
	ReasonMin     = "below_min"     // up to Min
	ReasonMax     = "above_max"     // down to Max

	ReasonMoving   = "slots_moving"     // held: slots are moving
	ReasonApart    = "members_apart"    // held: members ≠ replicas asked for
	ReasonCooldown = "cooldown"         // held: a breach within UpCooldown
	ReasonAtMax    = "at_max"           // held: a breach at Max
	ReasonWithin   = "within_objective" // held: nothing to do
	ReasonNotCalm  = "calm_not_long_enough"
)

// Decision is a replica count and why.
type Decision struct {
	// Replicas is the count wanted: Input.Replicas to hold.
	Replicas int
	Reason   string
	// P99 is the highest p99 among the members' loads.
	P99 time.Duration
}

// Decide returns the replica count p wants for in, and the state for the
// next decision. It is a pure function of its arguments.
//
//   - Nothing moves while slots move, nor until they have rested for
//     Rest, nor while the live members differ
//     from the replicas asked for (for up to DownCooldown: a replica
//     that never comes up must not freeze the count for ever).
//   - Outside [Min, Max], back to the bound.
//   - A p99 over the objective scales up in proportion, by at most
//     MaxStep, once UpCooldown has passed since the last scale.
//   - Calm for DownCooldown, and DownCooldown since the last scale,
//     scales down by one.
func Decide(p Policy, in Input, st State) (Decision, State) {
	d := Decision{Replicas: in.Replicas, P99: maxP99(in.Loads)}
	if !in.Settled {
		st.CalmSince, st.RestingSince = time.Time{}, time.Time{}
		d.Reason = ReasonMoving
		return d, st
	}
	if st.RestingSince.IsZero() {
		st.RestingSince = in.Now
	}
	if in.Now.Sub(st.RestingSince) < p.Rest {
		d.Reason = ReasonMoving
		return d, st
	}
	if len(in.Loads) != in.Replicas {
		if st.ApartSince.IsZero() {
			st.ApartSince = in.Now
		}
		if in.Now.Sub(st.ApartSince) < p.DownCooldown {
			st.CalmSince = time.Time{}
			d.Reason = ReasonApart
			return d, st
		}
	} else {
		st.ApartSince = time.Time{}
	}
	switch {
	case in.Replicas < p.Min:
		return scaled(d, p.Min, ReasonMin, in.Now, st)
	case in.Replicas > p.Max:
		return scaled(d, p.Max, ReasonMax, in.Now, st)
	case d.P99 > p.Objective:
		st.CalmSince = time.Time{}
		return up(p, in, d, st)
	}
	return down(p, in, d, st)
}

func up(p Policy, in Input, d Decision, st State) (Decision, State) {
	switch {
	case in.Replicas >= p.Max:
		d.Reason = ReasonAtMax
		return d, st
	case in.Now.Sub(st.Since) < p.UpCooldown:
		d.Reason = ReasonCooldown
		return d, st
	}
	ratio := d.P99.Seconds() / p.Objective.Seconds()
	want := int(math.Ceil(float64(in.Replicas) * ratio))
	want = min(max(want, in.Replicas+1), in.Replicas+p.MaxStep, p.Max)
	return scaled(d, want, ReasonLatency, in.Now, st)
}

func down(p Policy, in Input, d Decision, st State) (Decision, State) {
	if !calm(p, in) {
		st.CalmSince = time.Time{}
		d.Reason = ReasonWithin
		return d, st
	}
	if st.CalmSince.IsZero() {
		st.CalmSince = in.Now
	}
	if in.Replicas <= p.Min {
		d.Reason = ReasonWithin
		return d, st
	}
	if in.Now.Sub(st.CalmSince) < p.DownCooldown || in.Now.Sub(st.Since) < p.DownCooldown {
		d.Reason = ReasonNotCalm
		return d, st
	}
	return scaled(d, in.Replicas-1, ReasonCalm, in.Now, st)
}

// calm reports whether every member published a load, each p99 is within
// half the objective, and their work would keep one replica fewer busy
// at most downBusy on average.
func calm(p Policy, in Input) bool {
	busy := 0.0
	for _, l := range in.Loads {
		if l == nil || l.QueueP99 > p.Objective/2 {
			return false
		}
		busy += l.Busy
	}
	return in.Replicas > 1 && busy <= downBusy*float64(in.Replicas-1)
}

func scaled(d Decision, to int, why string, now time.Time, st State) (Decision, State) {
	d.Replicas, d.Reason = to, why
	st.Since, st.CalmSince = now, time.Time{}
	return d, st
}

func maxP99(loads map[string]*Load) time.Duration {
	var m time.Duration
	for _, l := range loads {
		if l != nil {
			m = max(m, l.QueueP99)
		}
	}
	return m
}
