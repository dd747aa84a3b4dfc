package sharding

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// act is one line of a --record-reconciles file (package internal/actlog).
type act struct {
	kind string // "start" or "end" of a reconcile, or "write"
	at   int64  // unix nanoseconds
	what string // the key (namespace/name) of a start or end; "METHOD path" of a write
	pid  int
}

// parseAct parses one line: start|end <unix-nanos> <key> <pid>, or
// write <unix-nanos> <METHOD> <path> <pid>.
func parseAct(line string) (act, error) {
	fs := strings.Fields(line)
	want := 4
	if len(fs) > 0 && fs[0] == "write" {
		want = 5
	}
	switch {
	case len(fs) == 0:
		return act{}, fmt.Errorf("record line %q: empty", line)
	case fs[0] != "start" && fs[0] != "end" && fs[0] != "write":
		return act{}, fmt.Errorf("record line %q: want start, end or write", line)
	case len(fs) != want:
		return act{}, fmt.Errorf("record line %q: want %d fields", line, want)
	}
	at, err1 := strconv.ParseInt(fs[1], 10, 64)
	pid, err2 := strconv.Atoi(fs[want-1])
	if err1 != nil || err2 != nil {
		return act{}, fmt.Errorf("record line %q: bad number", line)
	}
	return act{kind: fs[0], at: at, what: strings.Join(fs[2:want-1], " "), pid: pid}, nil
}

// readActs reads every line of a record file whose writers have exited;
// a line it cannot parse is an error.
func readActs(path string) ([]act, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []act
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, err := parseAct(sc.Text())
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

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
	acts, err := readActs(path)
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
		k := pk{a.pid, a.what}
		switch a.kind {
		case "start":
			if _, ok := open[k]; ok {
				return nil, fmt.Errorf("process %d started %s twice without an end", a.pid, a.what)
			}
			open[k] = a.at
		case "end":
			s, ok := open[k]
			if !ok {
				return nil, fmt.Errorf("process %d ended %s without a start", a.pid, a.what)
			}
			delete(open, k)
			out = append(out, interval{a.what, a.pid, s, a.at})
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

// liveActs reads a record file that replicas may still be writing: a line
// it cannot parse (the last, half written) is skipped.
func liveActs(path string) ([]act, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []act
	for _, line := range strings.Split(string(b), "\n") {
		if a, err := parseAct(line); err == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

// starts returns, per key, the pids that started reconciling it within
// [from, to) (unix nanoseconds).
func starts(path string, from, to int64) (map[string]map[int]bool, error) {
	acts, err := liveActs(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]bool{}
	for _, a := range acts {
		if a.kind != "start" || a.at < from || a.at >= to {
			continue
		}
		if out[a.what] == nil {
			out[a.what] = map[int]bool{}
		}
		out[a.what][a.pid] = true
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
