package membership

import (
	"fmt"
	"testing"
)

func names(n int) []string {
	var ms []string
	for i := range n {
		ms = append(ms, fmt.Sprintf("replica-%d", i))
	}
	return ms
}

func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Every member gets slots/N slots or one more, and one member joining or
// leaving moves about slots/N slots: no more than twice the minimum plus
// two.
func TestAssignBalancesAndMovesFew(t *testing.T) {
	for n := 3; n <= 10; n++ {
		for _, slots := range []int{64, 128, 256} {
			t.Run(fmt.Sprintf("members=%d/slots=%d", n, slots), func(t *testing.T) {
				ms := names(n)
				a := Assign(ms, slots)
				load := map[string]int{}
				for s, m := range a {
					if m == "" {
						t.Fatalf("slot %d unassigned", s)
					}
					load[m]++
				}
				lo, hi := slots/n, (slots+n-1)/n
				for _, m := range ms {
					if load[m] < lo || load[m] > hi {
						t.Errorf("%s has %d slots, want %d..%d", m, load[m], lo, hi)
					}
				}
				join := moved(a, Assign(append(ms, "replica-new"), slots))
				if ideal := slots / (n + 1); join > 2*ideal+2 {
					t.Errorf("a join moved %d slots, want about %d", join, ideal)
				}
				leave := moved(a, Assign(ms[1:], slots))
				if ideal := slots / n; leave > 2*ideal+2 {
					t.Errorf("a leave moved %d slots, want about %d", leave, ideal)
				}
			})
		}
	}
}

// Without the finaliser, rendezvous over FNV-1a is badly uneven
// (SHARDING.md); this guards that the finaliser stays in: raw scores
// differing only in the low bits must come out far apart.
func TestFmix64Avalanches(t *testing.T) {
	a, b := fmix64(1), fmix64(2)
	diff := a ^ b
	bits := 0
	for ; diff != 0; diff &= diff - 1 {
		bits++
	}
	if bits < 16 {
		t.Errorf("fmix64(1)^fmix64(2) differs in %d bits, want about 32", bits)
	}
}

// The assignment depends on the set of members, not their order.
func TestAssignIgnoresOrder(t *testing.T) {
	a := Assign([]string{"a", "b", "c"}, 64)
	b := Assign([]string{"c", "a", "b", "a"}, 64)
	if moved(a, b) != 0 {
		t.Errorf("order changed the assignment: %v vs %v", a, b)
	}
	if Assign(nil, 8) != nil {
		t.Error("Assign(nil) != nil")
	}
}
