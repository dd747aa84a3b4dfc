package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// GetChanged hands out, with each key, the earliest AddOpts.Changed of its
// adds since it was last handed out: coalesced adds keep the earliest; an
// add while the key is processed keeps its own time for the next hand-out,
// not the one just handed out; adds that say nothing, and keys handed out
// by Get, leave the zero time; a delayed add keeps its time until it is
// ready.
func TestGetChanged(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s int) AddOpts { return AddOpts{Changed: t0.Add(time.Duration(s) * time.Second)} }
	type got struct {
		Key     string
		Changed time.Time
	}
	get := func(q *Queue[string]) got {
		t.Helper()
		if q.Len() == 0 {
			t.Fatal("GetChanged: nothing ready")
		}
		k, _, changed, shutdown := q.GetChanged()
		if shutdown {
			t.Fatal("GetChanged: shut down")
		}
		return got{k, changed}
	}
	tests := []struct {
		name string
		run  func(q *Queue[string]) []got
		want []got
	}{{
		name: "coalesced adds keep the earliest",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(2), "a")
			q.AddWithOpts(at(0), "a")
			q.AddWithOpts(at(1), "a")
			q.Add("a")
			g := get(q)
			q.Done(g.Key)
			return []got{g}
		},
		want: []got{{"a", t0}},
	}, {
		name: "an earlier time after another key's later one still wins",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(2), "a")
			q.AddWithOpts(at(5), "b")
			q.AddWithOpts(at(1), "a")
			q.AddWithOpts(at(5), "a")
			a, b := get(q), get(q)
			return []got{a, b}
		},
		want: []got{{"a", t0.Add(time.Second)}, {"b", t0.Add(5 * time.Second)}},
	}, {
		name: "a re-add while processing keeps its own time",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(0), "a")
			first := get(q)
			q.AddWithOpts(at(5), "a")
			q.AddWithOpts(at(3), "a")
			q.Done(first.Key)
			second := get(q)
			q.Done(second.Key)
			return []got{first, second}
		},
		want: []got{{"a", t0}, {"a", t0.Add(3 * time.Second)}},
	}, {
		name: "zero when no add said",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(0), "a")
			first := get(q)
			q.Add("a") // a retry: no change behind it
			q.Done(first.Key)
			q.AddWithOpts(AddOpts{Priority: LowPriority}, "b")
			second, third := get(q), get(q)
			return []got{first, second, third}
		},
		want: []got{{"a", t0}, {"a", time.Time{}}, {"b", time.Time{}}},
	}, {
		name: "Get forgets it",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(0), "a")
			k, _, _ := q.Get()
			q.Add(k)
			q.Done(k)
			return []got{get(q)}
		},
		want: []got{{"a", time.Time{}}},
	}, {
		name: "kept through a delay",
		run: func(q *Queue[string]) []got {
			opts := at(1)
			opts.After = time.Hour
			q.AddWithOpts(opts, "a")
			q.AddWithOpts(at(0), "a") // ready now
			return []got{get(q)}
		},
		want: []got{{"a", t0}},
	}, {
		name: "GetSpareChanged hands it out too",
		run: func(q *Queue[string]) []got {
			q.AddWithOpts(at(0), "a")
			k, _, changed, _ := q.GetSpareChanged(0)
			q.Done(k)
			return []got{{k, changed}}
		},
		want: []got{{"a", t0}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueue(t, Options[string]{})
			if diff := cmp.Diff(tt.want, tt.run(q), cmp.Comparer(time.Time.Equal)); diff != "" {
				t.Errorf("hand-outs (-want +got):\n%s", diff)
			}
			q.mu.Lock()
			defer q.mu.Unlock()
			for _, n := range q.changed.all() {
				if !n.timed || n.state == 0 {
					t.Errorf("changed holds a node that is not timed or free: %+v", n)
				}
			}
		})
	}
}

// A change time the queue cannot hold in Unix nanoseconds (before 1678 or
// after 2262: a managedFields time a client wrote) is kept as unknown, not
// wrapped around into some other date, which the lag metrics would
// observe as centuries of lag.
func TestChangedOutOfRangeIsUnknown(t *testing.T) {
	for _, changed := range []time.Time{
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		q := New(Options[string]{})
		q.AddWithOpts(AddOpts{Changed: changed}, "a")
		_, _, got, _ := q.GetChanged()
		if !got.IsZero() {
			t.Errorf("added with Changed %v: GetChanged handed out %v; want the zero time", changed, got)
		}
		q.ShutDown()
	}
}
