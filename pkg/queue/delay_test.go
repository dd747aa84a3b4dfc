package queue

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Keys whose delays end at the same instant become ready in the order they
// were added, as "within one priority, first in, first out" promises. With
// a fake clock or testing/synctest such ties are the rule, not the
// exception.
func TestDelayTiesFirstInFirstOut(t *testing.T) {
	for _, n := range []int{3, 4, 7, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, Options[string]{})
				var want []string
				for i := range n {
					k := fmt.Sprintf("k%02d", i)
					q.AddAfter(k, time.Second)
					want = append(want, k)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if diff := cmp.Diff(want, drain(t, q)); diff != "" {
					t.Errorf("order (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// A key keeps its place among ties when a later add brings its delay
// forward to the same instant as others': its place is that of its first
// add.
func TestDelayTieKeepsPlaceOfFirstAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.AddAfter("a", 2*time.Second)
		q.AddAfter("b", time.Second)
		q.AddAfter("c", time.Second)
		q.AddAfter("a", time.Second) // now due with b and c
		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"a", "b", "c"}, drain(t, q)); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
}
