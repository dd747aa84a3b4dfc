package sharding

import (
	"fmt"
	"sort"

	"github.com/opkit-dev/opkit/test/internal/operators"
)

// act is one line of a --record-reconciles file.
type act = operators.Act

// interval is one reconcile of key by process pid, from the
// --record-reconciles lines, in unix nanoseconds.
type interval struct {
	key        string
	pid        int
	start, end int64
}

// readIntervals pairs the start and end lines of each (process, key): a
// process reconciles a key at most once at a time (its queue's promise),
// so its lines for a key alternate. A start without an end (its process
// was killed) ends at ends[pid], or never when that is missing. Write
// lines are not reconciles: it skips them.
func readIntervals(path string, ends map[int]int64) ([]interval, error) {
	acts, err := operators.ReadActs(path)
	if err != nil {
		return nil, err
	}
	type pk struct {
		pid int
		key string
	}
	open := map[pk]int64{}
	var out []interval
	for _, a := range acts {
		k := pk{a.PID, a.What}
		switch a.Kind {
		case "start":
			if _, ok := open[k]; ok {
				return nil, fmt.Errorf("process %d started %s twice without an end", a.PID, a.What)
			}
			open[k] = a.At
		case "end":
			s, ok := open[k]
			if !ok {
				return nil, fmt.Errorf("process %d ended %s without a start", a.PID, a.What)
			}
			delete(open, k)
			out = append(out, interval{a.What, a.PID, s, a.At})
		}
	}
	for k, s := range open {
		end, ok := ends[k.pid]
		if !ok {
			end = 1<<63 - 1
		}
		out = append(out, interval{k.key, k.pid, s, end})
	}
	return out, nil
}

// overlaps returns the pairs of intervals of one key, from two processes,
// that overlap in time.
func overlaps(all []interval) [][2]interval {
	byKey := map[string][]interval{}
	for _, iv := range all {
		byKey[iv.key] = append(byKey[iv.key], iv)
	}
	var out [][2]interval
	for _, ivs := range byKey {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
		for i, a := range ivs {
			for _, b := range ivs[i+1:] {
				if b.start >= a.end {
					break
				}
				if a.pid != b.pid {
					out = append(out, [2]interval{a, b})
				}
			}
		}
	}
	return out
}

// starts returns, per key, the pids that started reconciling it within
// [from, to) (unix nanoseconds).
func starts(path string, from, to int64) (map[string]map[int]bool, error) {
	acts, err := operators.LiveActs(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]bool{}
	for _, a := range acts {
		if a.Kind != "start" || a.At < from || a.At >= to {
			continue
		}
		if out[a.What] == nil {
			out[a.What] = map[int]bool{}
		}
		out[a.What][a.PID] = true
	}
	return out, nil
}

// handedOver returns a check that every key pid started reconciling
// within [from, to) has been started again by another process since to:
// the keys of its slots have new owners that reconcile them.
func handedOver(path string, pid int, from, to int64) (func() error, int, error) {
	before, err := starts(path, from, to)
	if err != nil {
		return nil, 0, err
	}
	var keys []string
	for k, pids := range before {
		if pids[pid] {
			keys = append(keys, k)
		}
	}
	return func() error {
		after, err := starts(path, to, 1<<63-1)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if len(after[k]) == 0 || (len(after[k]) == 1 && after[k][pid]) {
				return fmt.Errorf("%s, last reconciled by pid %d, not reconciled by another process since", k, pid)
			}
		}
		return nil
	}, len(keys), nil
}
