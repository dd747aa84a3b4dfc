package queue

import "testing"

// The hot paths allocate nothing once the queue has room for its keys: Add,
// a de-duplicated Add, Get, a re-add while processing, Done. Aging is off so
// that no background goroutine runs (AllocsPerRun counts every goroutine's
// allocations).
func TestSteadyStateAllocs(t *testing.T) {
	type request struct{ Namespace, Name string }
	for _, fair := range []bool{false, true} {
		opts := Options[request]{MaxWait: -1}
		if fair {
			opts.Tenant = func(r request) string { return r.Namespace }
		}
		q := newQueue(t, opts)
		keys := []request{{"a", "1"}, {"a", "2"}, {"b", "1"}}
		cycle := func() {
			for _, k := range keys {
				q.Add(k)
				q.AddWithOpts(AddOpts{Priority: 1}, k)
			}
			for range keys {
				k, _, _ := q.Get()
				q.Add(k) // while processing: queued again at Done
				q.Done(k)
			}
			for range keys {
				k, _, _ := q.Get()
				q.Done(k)
			}
		}
		cycle()
		if got := testing.AllocsPerRun(100, cycle); got != 0 {
			t.Errorf("fair %v: %v allocations per cycle, want 0", fair, got)
		}
		// GetSpare, and Get and Done counting keys in flight per tenant
		// once GetSpare has been called, allocate nothing either.
		// Get hands out a/1; GetSpare then has b/1 to take, twice, for
		// a's keys wait for a/1 (without fairness they all wait for it).
		spareCycle := func() {
			for _, k := range keys {
				q.Add(k)
			}
			busy, _, _ := q.Get()
			if fair {
				for range 2 {
					k, _, _ := q.GetSpare(0)
					q.Add(k) // while processing: queued again at Done
					q.Done(k)
				}
			}
			q.Done(busy)
			for q.Len() > 0 {
				k, _, _ := q.GetSpare(0)
				q.Done(k)
			}
		}
		spareCycle()
		if got := testing.AllocsPerRun(100, spareCycle); got != 0 {
			t.Errorf("fair %v, with GetSpare: %v allocations per cycle, want 0", fair, got)
		}
	}
}
