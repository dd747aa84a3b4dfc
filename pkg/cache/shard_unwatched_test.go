package cache_test

import (
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// A slot set swapped out stops its informers' watches on purpose: the
// type must not read as unwatched afterwards, while the new set's
// informers watch. (The old watch's stop, landing after the new watch
// opened, marked the namespace unwatched until the new watch ended: five
// replicas of the scale-out benchmark stayed unready, "synced, but not
// watched", after their slots moved.)
func TestSetSlotsLeavesTheTypeWatched(t *testing.T) {
	for _, filter := range []cache.ServerFilter{cache.ServerFilterDetect, cache.ServerFilterOff} {
		ns := env.Namespace(t)
		createShardConfigMaps(t, ns, 20)
		sc := newShardedCache(t, ns, filter, 16, slotRange(0, 7))
		for _, set := range [][]int{slotRange(0, 11), slotRange(4, 15), slotRange(8, 9)} {
			if err := sc.c.SetSlots(t.Context(), set); err != nil {
				t.Fatal(err)
			}
		}
		// The old informers stop after the swap; give their watches'
		// stops time to land.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			for _, st := range sc.c.Status() {
				if !st.Unwatched.IsZero() {
					t.Fatalf("filter %v: %v reads as unwatched since %v after its slots moved, though its new informers watch", filter, st.GVK, st.Unwatched)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
