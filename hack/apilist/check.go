package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// checkFile fails when the listing in file differs from lines, naming the
// lines added (+) and removed (-).
func checkFile(file string, lines []string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read the listing: %w (run make api)", err)
	}
	added, removed := diff(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), lines)
	if len(added)+len(removed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the exported API differs from %s (+ in the code only, - in the listing only):\n", file)
	for _, l := range removed {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range added {
		b.WriteString("+ " + l + "\n")
	}
	fmt.Fprintf(&b, "run make api and commit %s, so that the change shows in review", file)
	return fmt.Errorf("%s", b.String())
}

// diff returns the lines of want missing from have (added) and those of
// have missing from want (removed), each sorted.
func diff(have, want []string) (added, removed []string) {
	in := func(lines []string) map[string]bool {
		m := make(map[string]bool, len(lines))
		for _, l := range lines {
			if l != "" {
				m[l] = true
			}
		}
		return m
	}
	h, w := in(have), in(want)
	for l := range w {
		if !h[l] {
			added = append(added, l)
		}
	}
	for l := range h {
		if !w[l] {
			removed = append(removed, l)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}
