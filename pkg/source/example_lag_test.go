package source_test

import (
	"fmt"
	"time"

	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// When several changes of one key wait for one reconcile, the earliest
// counts: the reconcile's lag is that of the oldest change it handles. A
// Take forgets it, so the next reconcile of the key counts only changes
// recorded after.
func ExampleChangeTimes() {
	changes := source.NewChangeTimes[reconcile.Request]()
	key := reconcile.Request{Namespace: "shop", Name: "web-config"}
	first := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	changes.Record(key, first.Add(2*time.Second))
	changes.Record(key, first)
	changes.Record(key, first.Add(time.Second))

	t, ok := changes.Take(key) // a worker got the key
	fmt.Println(t.Format(time.TimeOnly), ok)
	_, ok = changes.Take(key) // a retry: no change behind it
	fmt.Println(ok)
	// Output:
	// 12:00:00 true
	// false
}
