package queue_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/opkit-dev/opkit/pkg/queue"
)

// A worker drains the queue: live changes come before the backlog of an
// initial list, and namespaces take turns.
func Example() {
	q := queue.New(queue.Options[string]{
		Tenant: func(key string) string { return strings.SplitN(key, "/", 2)[0] },
	})
	defer q.ShutDown()

	// The initial list: low priority.
	q.AddWithOpts(queue.AddOpts{Priority: queue.LowPriority}, "team-a/x", "team-a/y", "team-b/z")
	// Live changes, team-a busier than team-b.
	q.Add("team-a/1")
	q.Add("team-a/2")
	q.Add("team-a/1") // already queued: de-duplicated
	q.Add("team-b/1")

	for q.Len() > 0 {
		key, priority, _ := q.Get()
		fmt.Println(key, priority)
		q.Done(key)
	}
	// Output:
	// team-a/1 0
	// team-b/1 0
	// team-a/2 0
	// team-a/x -100
	// team-b/z -100
	// team-a/y -100
}

// Retrying a failing key with backoff, and forgetting its failures once it
// succeeds.
func ExampleQueue_AddRateLimited() {
	q := queue.New(queue.Options[string]{})
	defer q.ShutDown()

	q.Add("flaky")
	for attempt := 1; ; attempt++ {
		key, _, _ := q.Get()
		if attempt < 3 {
			q.AddRateLimited(key) // back off: 5ms, then 10ms
			q.Done(key)
			continue
		}
		fmt.Println(key, "succeeded after", q.NumRequeues(key), "retries")
		q.Forget(key)
		q.Done(key)
		break
	}
	// Output: flaky succeeded after 2 retries
}

// When several changes of one key wait for one hand-out, the earliest
// counts: the worker's wait is that of the oldest change it handles. A
// key added again without a change time, such as a retry, comes out with
// none.
func ExampleQueue_GetChanged() {
	q := queue.New(queue.Options[string]{})
	defer q.ShutDown()

	first := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	q.AddWithOpts(queue.AddOpts{Changed: first.Add(2 * time.Second)}, "shop/web-config")
	q.AddWithOpts(queue.AddOpts{Changed: first}, "shop/web-config")
	q.AddWithOpts(queue.AddOpts{Changed: first.Add(time.Second)}, "shop/web-config")

	key, _, changed, _ := q.GetChanged()
	fmt.Println(key, changed.UTC().Format(time.TimeOnly))
	q.AddRateLimited(key) // a retry: no change behind it
	q.Done(key)
	key, _, changed, _ = q.GetChanged()
	fmt.Println(key, changed.IsZero())
	q.Done(key)
	// Output:
	// shop/web-config 12:00:00
	// shop/web-config true
}
