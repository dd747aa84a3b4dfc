package autoscale

import (
	"fmt"
	"testing"
	"time"
)

var policy = Policy{Objective: time.Second, Min: 1, Max: 8, MaxStep: 4, UpCooldown: time.Minute, DownCooldown: 5 * time.Minute, Rest: 30 * time.Second}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fleet returns the loads of n members, each with p99 q and busy b.
func fleet(n int, q time.Duration, b float64) map[string]*Load {
	out := map[string]*Load{}
	for i := range n {
		out[fmt.Sprintf("m%d", i)] = &Load{QueueP99: q, Busy: b}
	}
	return out
}

func TestDecide(t *testing.T) {
	rested := t0.Add(-time.Hour)
	long := State{Since: t0.Add(-time.Hour), RestingSince: rested}
	calmLong := State{Since: t0.Add(-time.Hour), CalmSince: t0.Add(-10 * time.Minute), RestingSince: rested}
	withNil := fleet(2, 0, 0)
	withNil["m1"] = nil
	for _, tc := range []struct {
		name    string
		p       Policy
		in      Input
		st      State
		want    int
		reason  string
		wantSt  State
		checkSt bool
	}{
		{name: "breach scales up in proportion", in: Input{Replicas: 2, Loads: fleet(2, 2500*time.Millisecond, 1), Settled: true}, st: long, want: 5, reason: ReasonLatency},
		{name: "a slight breach adds one", in: Input{Replicas: 2, Loads: fleet(2, 1100*time.Millisecond, 1), Settled: true}, st: long, want: 3, reason: ReasonLatency},
		{name: "the step is bounded", in: Input{Replicas: 1, Loads: fleet(1, 100*time.Second, 1), Settled: true}, st: long, want: 5, reason: ReasonLatency},
		{name: "never above max", in: Input{Replicas: 6, Loads: fleet(6, 10*time.Second, 1), Settled: true}, st: long, want: 8, reason: ReasonLatency},
		{name: "at max holds", in: Input{Replicas: 8, Loads: fleet(8, 10*time.Second, 1), Settled: true}, st: long, want: 8, reason: ReasonAtMax},
		{name: "one replica's breach is enough", in: Input{Replicas: 2, Loads: map[string]*Load{"a": {QueueP99: 3 * time.Second}, "b": {}}, Settled: true}, st: long, want: 6, reason: ReasonLatency},
		{name: "no scale while slots move", in: Input{Replicas: 2, Loads: fleet(2, 10*time.Second, 1)}, st: State{Since: long.Since, RestingSince: t0.Add(-time.Hour)}, want: 2, reason: ReasonMoving,
			wantSt: State{Since: long.Since}, checkSt: true},
		{name: "no scale until slots rested", in: Input{Replicas: 2, Loads: fleet(2, 10*time.Second, 1), Settled: true}, st: State{Since: long.Since, RestingSince: t0.Add(-10 * time.Second)}, want: 2, reason: ReasonMoving},
		{name: "slots come to rest", in: Input{Replicas: 2, Loads: fleet(2, 10*time.Second, 1), Settled: true}, st: State{Since: long.Since}, want: 2, reason: ReasonMoving,
			wantSt: State{Since: long.Since, RestingSince: t0}, checkSt: true},
		{name: "no scale while members differ from replicas", in: Input{Replicas: 3, Loads: fleet(2, 10*time.Second, 1), Settled: true}, st: long, want: 3, reason: ReasonApart,
			wantSt: State{Since: long.Since, ApartSince: t0, RestingSince: rested}, checkSt: true},
		{name: "members apart for the down cool-down no longer hold", in: Input{Replicas: 3, Loads: fleet(2, 10*time.Second, 1), Settled: true},
			st: State{Since: long.Since, ApartSince: t0.Add(-5 * time.Minute), RestingSince: rested}, want: 7, reason: ReasonLatency},
		{name: "up cool-down", in: Input{Replicas: 2, Loads: fleet(2, 10*time.Second, 1), Settled: true}, st: State{Since: t0.Add(-30 * time.Second), RestingSince: rested}, want: 2, reason: ReasonCooldown},
		{name: "within the objective holds", in: Input{Replicas: 2, Loads: fleet(2, 900*time.Millisecond, 0.9), Settled: true}, st: long, want: 2, reason: ReasonWithin},
		{name: "calm for the down cool-down scales down by one", in: Input{Replicas: 5, Loads: fleet(5, 10*time.Millisecond, 0.1), Settled: true}, st: calmLong, want: 4, reason: ReasonCalm,
			wantSt: State{Since: t0, RestingSince: rested}, checkSt: true},
		{name: "calm begins", in: Input{Replicas: 5, Loads: fleet(5, 10*time.Millisecond, 0.1), Settled: true}, st: long, want: 5, reason: ReasonNotCalm,
			wantSt: State{Since: long.Since, CalmSince: t0, RestingSince: rested}, checkSt: true},
		{name: "calm, but the last scale was recent", in: Input{Replicas: 5, Loads: fleet(5, 10*time.Millisecond, 0.1), Settled: true},
			st: State{Since: t0.Add(-time.Minute), CalmSince: t0.Add(-10 * time.Minute), RestingSince: rested}, want: 5, reason: ReasonNotCalm},
		{name: "too busy to lose a replica", in: Input{Replicas: 2, Loads: fleet(2, 10*time.Millisecond, 0.4), Settled: true}, st: calmLong, want: 2, reason: ReasonWithin,
			wantSt: State{Since: long.Since, RestingSince: rested}, checkSt: true},
		{name: "a member without a load is not calm", in: Input{Replicas: 2, Loads: withNil, Settled: true}, st: calmLong, want: 2, reason: ReasonWithin},
		{name: "a p99 over half the objective is not calm", in: Input{Replicas: 3, Loads: fleet(3, 600*time.Millisecond, 0.1), Settled: true}, st: calmLong, want: 3, reason: ReasonWithin},
		{name: "never below min", in: Input{Replicas: 2, Loads: fleet(2, 0, 0), Settled: true}, p: Policy{Objective: time.Second, Min: 2, Max: 8, MaxStep: 4, DownCooldown: time.Minute}, st: calmLong, want: 2, reason: ReasonWithin},
		{name: "below min scales up to it", in: Input{Replicas: 1, Loads: fleet(1, 0, 0), Settled: true}, p: Policy{Objective: time.Second, Min: 3, Max: 8, MaxStep: 1}, st: long, want: 3, reason: ReasonMin},
		{name: "above max scales down to it", in: Input{Replicas: 10, Loads: fleet(10, 0, 0), Settled: true}, st: long, want: 8, reason: ReasonMax},
		{name: "a breach ends calm", in: Input{Replicas: 8, Loads: fleet(8, 2*time.Second, 1), Settled: true}, st: calmLong, want: 8, reason: ReasonAtMax,
			wantSt: State{Since: long.Since, RestingSince: rested}, checkSt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy
			if tc.p != (Policy{}) {
				p = tc.p
			}
			tc.in.Now = t0
			d, st := Decide(p, tc.in, tc.st)
			if d.Replicas != tc.want || d.Reason != tc.reason {
				t.Errorf("Decide = %d (%s), want %d (%s)", d.Replicas, d.Reason, tc.want, tc.reason)
			}
			if tc.checkSt && st != tc.wantSt {
				t.Errorf("state = %+v, want %+v", st, tc.wantSt)
			}
		})
	}
}

// A run of decisions over a clock: a breach scales 1 → 5 → 8 as cool-downs
// allow, then calm scales down one step per down cool-down, never below
// Min.
func TestDecideOverTime(t *testing.T) {
	p := policy
	p.Min = 2
	replicas := 1
	st := State{Since: t0}
	var got []int
	now := t0
	step := func(q time.Duration, b float64) {
		now = now.Add(15 * time.Second)
		d, next := Decide(p, Input{Now: now, Replicas: replicas, Loads: fleet(replicas, q, b), Settled: true}, st)
		st = next
		if d.Replicas != replicas {
			replicas = d.Replicas
			got = append(got, replicas)
		}
	}
	for range 12 {
		step(20*time.Second, 1)
	}
	for range 200 {
		step(0, 0)
	}
	want := []int{2, 6, 8, 7, 6, 5, 4, 3, 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replica counts = %v, want %v", got, want)
	}
}
