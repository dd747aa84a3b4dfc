package membership_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

// Assign shares slots evenly; every member computes the same result from
// the same set of members.
func ExampleAssign() {
	owner := membership.Assign([]string{"replica-a", "replica-b", "replica-c"}, 64, nil)
	count := map[string]int{}
	for _, m := range owner {
		count[m]++
	}
	fmt.Println(count["replica-a"]+count["replica-b"]+count["replica-c"], len(count))
	for _, n := range count {
		if n < 21 || n > 22 {
			fmt.Println("uneven:", count)
		}
	}
	// Output: 64 3
}

// New checks the timings: a renew deadline not below the lease duration
// would let a member dispatch after others took its slots.
func ExampleNew_invalid() {
	_, err := membership.New(nil, membership.Options{
		Namespace: "operators", Slots: 16, LeaseDuration: 4e9, RenewDeadline: 4e9, RetryPeriod: 5e8,
	})
	fmt.Println(errors.Is(err, membership.ErrInvalidOptions))
	// Output: true
}

// How a manager uses a Member: it asks MayDispatch before each reconcile,
// starts a slot's keys when it is held, and on release stops them and
// waits for the slot's in-flight reconciles before returning.
func ExampleMember() {
	var cs kubernetes.Interface // a clientset of the member's own
	var inflight reconciles
	m, err := membership.New(cs, membership.Options{
		Namespace:     "operators",
		Slots:         64,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Handler: membership.HandlerFuncs{
			OnHeld: func(slots []int) { fmt.Println("start dispatching", slots) },
			OnRelease: func(ctx context.Context, slots []int) {
				for _, s := range slots {
					inflight.wait(s)
				}
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	go func() { _ = m.Run(context.Background()) }()
	if slot := 7; m.MayDispatch(slot) {
		inflight.add(slot, 1)
		fmt.Println("reconcile a key of slot", slot)
		inflight.add(slot, -1)
	}
}

// reconciles stands for the manager's count of in-flight reconciles by
// slot; a worker calls add(slot, 1) before a reconcile and add(slot, -1)
// after it.
type reconciles struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    map[int]int
}

func (r *reconciles) add(slot, d int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n, r.cond = map[int]int{}, sync.NewCond(&r.mu)
	}
	r.n[slot] += d
	r.cond.Broadcast()
}

func (r *reconciles) wait(slot int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n[slot] > 0 {
		r.cond.Wait()
	}
}
