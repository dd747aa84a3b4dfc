package fleetsharding

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/opkit-dev/opkit/test/internal/operators"
)

type act = operators.Act

// memberOf returns the member an act is about: the first part of a
// reconcile's key (cluster/namespace/name), the namespace of a write's
// path (namespaces are the members), the member of an own or disown.
func memberOf(a act) string {
	switch a.Kind {
	case "start", "end":
		m, _, _ := strings.Cut(a.What, "/")
		return m
	case "write":
		_, path, _ := strings.Cut(a.What, " ")
		seg := strings.Split(strings.Trim(path, "/"), "/")
		for i := 0; i+1 < len(seg); i++ {
			if seg[i] == "namespaces" {
				return seg[i+1]
			}
		}
		return ""
	}
	return a.What
}

// freeze is when a process was stopped (SIGSTOP) and continued.
type freeze struct {
	pid             int
	frozeAt, thawAt int64
}

// verdict is what the records say of ownership.
type verdict struct {
	starts, writes int // reconcile starts and writes in all
	// nonOwner counts the reconcile starts and writes by a process that
	// was not the member's owner then: the owner is the process that
	// last recorded "own" of it.
	nonOwnerStarts, nonOwnerWrites int
	// straddles counts reconciles of a member in flight when another
	// process recorded "own" of it. A reconcile of a killed process ends
	// at its kill, and one of the frozen process in flight at its freeze
	// ends at the freeze: it did nothing while stopped, and what it did
	// after is counted by nonOwnerWrites.
	straddles int
	examples  []string // the first few of the above
}

func (v verdict) bad() int { return v.nonOwnerStarts + v.nonOwnerWrites + v.straddles }

// judge reads acts (in any order) with the kills' times (pid → unix
// nanoseconds) and the freeze.
func judge(acts []act, kills map[int]int64, fz freeze) verdict {
	acts = slices.Clone(acts)
	slices.SortStableFunc(acts, func(a, b act) int { return cmp.Compare(a.At, b.At) })
	var v verdict
	note := func(format string, args ...any) {
		if len(v.examples) < 10 {
			v.examples = append(v.examples, fmt.Sprintf(format, args...))
		}
	}
	owner := map[string]int{}
	type pk struct {
		pid int
		key string
	}
	open := map[pk]int64{} // reconciles in flight: their start
	for _, a := range acts {
		m := memberOf(a)
		switch a.Kind {
		case "own":
			owner[m] = a.PID
			for k, start := range open {
				if k.pid != a.PID && memberOf(act{Kind: "start", What: k.key}) == m && !ended(k.pid, start, a.At, kills, fz) {
					v.straddles++
					note("pid %d's reconcile of %s from %d was in flight when pid %d took %s at %d", k.pid, k.key, start, a.PID, m, a.At)
				}
			}
		case "start":
			v.starts++
			open[pk{a.PID, a.What}] = a.At
			if owner[m] != a.PID {
				v.nonOwnerStarts++
				note("pid %d started %s at %d, owned by pid %d", a.PID, a.What, a.At, owner[m])
			}
		case "end":
			delete(open, pk{a.PID, a.What})
		case "write":
			v.writes++
			if owner[m] != a.PID {
				v.nonOwnerWrites++
				note("pid %d sent %s at %d, %s owned by pid %d", a.PID, a.What, a.At, m, owner[m])
			}
		}
	}
	return v
}

// ended reports whether a reconcile of pid started at start counts as
// ended by at: its process was killed, or frozen, between.
func ended(pid int, start, at int64, kills map[int]int64, fz freeze) bool {
	if k, ok := kills[pid]; ok && k <= at {
		return true
	}
	return pid == fz.pid && start < fz.frozeAt && fz.frozeAt <= at
}

// owners returns each member's owner by the acts: the process that last
// recorded "own" of it.
func owners(acts []act) map[string]int {
	out := map[string]int{}
	for _, a := range acts {
		if a.Kind == "own" {
			out[a.What] = a.PID
		}
	}
	return out
}

// takeover returns, for the members pid owned at at, when (unix
// nanoseconds) the last of them was owned, and started reconciling, by
// another process after at; ok is false until every one has been.
func takeover(acts []act, pid int, at int64) (n int, owned, reconciled int64, ok bool) {
	before := map[string]int{}
	var members []string
	for _, a := range acts {
		if a.Kind == "own" && a.At < at {
			before[a.What] = a.PID
		}
	}
	for m, p := range before {
		if p == pid {
			members = append(members, m)
		}
	}
	for _, m := range members {
		o, r := firstBy(acts, m, pid, at, "own"), firstBy(acts, m, pid, at, "start")
		if o == 0 || r == 0 {
			return len(members), 0, 0, false
		}
		owned, reconciled = max(owned, o), max(reconciled, r)
	}
	return len(members), owned, reconciled, len(members) > 0
}

// firstBy returns when the first act of kind on member m by a process
// other than pid happened after at; 0 if none has.
func firstBy(acts []act, m string, pid int, at int64, kind string) int64 {
	var first int64
	for _, a := range acts {
		if a.Kind == kind && a.PID != pid && a.At > at && memberOf(a) == m && (first == 0 || a.At < first) {
			first = a.At
		}
	}
	return first
}
