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
