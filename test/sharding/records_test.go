package sharding

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

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
// was killed) ends at ends[pid], or never when that is missing.
func readIntervals(path string, ends map[int]int64) ([]interval, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type pk struct {
		pid int
		key string
	}
	open := map[pk]int64{}
	var out []interval
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			return nil, fmt.Errorf("record line %q: want 4 fields", sc.Text())
		}
		at, err1 := strconv.ParseInt(fs[1], 10, 64)
		pid, err2 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("record line %q: bad number", sc.Text())
		}
		k := pk{pid, fs[2]}
		switch fs[0] {
		case "start":
			if _, ok := open[k]; ok {
				return nil, fmt.Errorf("process %d started %s twice without an end", pid, fs[2])
			}
			open[k] = at
		case "end":
			s, ok := open[k]
			if !ok {
				return nil, fmt.Errorf("process %d ended %s without a start", pid, fs[2])
			}
			delete(open, k)
			out = append(out, interval{fs[2], pid, s, at})
		default:
			return nil, fmt.Errorf("record line %q: want start or end", sc.Text())
		}
	}
	for k, s := range open {
		end, ok := ends[k.pid]
		if !ok {
			end = 1<<63 - 1
		}
		out = append(out, interval{k.key, k.pid, s, end})
	}
	return out, sc.Err()
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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 4 || fs[0] != "start" {
			continue
		}
		at, err1 := strconv.ParseInt(fs[1], 10, 64)
		pid, err2 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil || at < from || at >= to {
			continue
		}
		if out[fs[2]] == nil {
			out[fs[2]] = map[int]bool{}
		}
		out[fs[2]][pid] = true
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
