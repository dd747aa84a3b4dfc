package queue_test

import (
	"fmt"
	"strings"

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
