package porting_test

import (
	"errors"
	"fmt"
	"time"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// Before: a Result is a struct of flags, and a terminal error is wrapped
// by controller-runtime's reconcile package.
func Example_resultControllerRuntime() {
	later := crreconcile.Result{RequeueAfter: time.Minute}
	err := crreconcile.TerminalError(errors.New("spec.source.kind: unknown kind Pod"))
	fmt.Println(later.RequeueAfter, errors.Is(err, crreconcile.TerminalError(nil)))
	// Output: 1m0s true
}

// After: a Result is built by a constructor and says one thing; Terminal
// marks an error that retrying cannot fix.
func Example_result() {
	later := reconcile.RequeueAfter(time.Minute)
	after, ok := later.Requeue()
	fmt.Println(after, ok, reconcile.Done().IsDone())

	err := reconcile.Terminal(errors.New("spec.source.kind: unknown kind Pod"))
	fmt.Println(errors.Is(err, reconcile.ErrTerminal))
	fmt.Println(errors.Is(crreconcile.TerminalError(errors.New("x")), reconcile.ErrTerminal))
	// Output:
	// 1m0s true true
	// true
	// false
}

// Each controller-runtime Result, and what it becomes: RequeueAfter with a
// delay of zero or less is Done, as controller-runtime treats it.
func Example_resultForms() {
	fmt.Println(reconcile.Done())                     // Result{}
	fmt.Println(reconcile.RequeueAfter(time.Minute))  // Result{RequeueAfter: time.Minute}
	fmt.Println(reconcile.RequeueAfter(0))            // Result{RequeueAfter: 0}
	fmt.Println(reconcile.RequeueAfter(-time.Minute)) // Result{RequeueAfter: -time.Minute}
	fmt.Println(reconcile.RequeueWithBackoff())       // Result{Requeue: true}
	// Output:
	// done
	// requeue after 1m0s
	// done
	// done
	// requeue with backoff
}

// Before: a helper of the controller's own picks the earliest of its
// parts' Results (cluster-api ships one as util.LowestNonZeroResult).
func lowestNonZeroResult(i, j crreconcile.Result) crreconcile.Result {
	switch {
	case i.IsZero():
		return j
	case j.IsZero():
		return i
	case i.Requeue: //lint:ignore SA1019 ported code may still set it
		return i
	case j.Requeue: //lint:ignore SA1019 ported code may still set it
		return j
	case i.RequeueAfter < j.RequeueAfter:
		return i
	default:
		return j
	}
}

func Example_resultSoonestControllerRuntime() {
	certificate := crreconcile.Result{RequeueAfter: time.Hour}
	rollout := crreconcile.Result{RequeueAfter: 10 * time.Second}
	fmt.Println(lowestNonZeroResult(lowestNonZeroResult(certificate, rollout), crreconcile.Result{}).RequeueAfter)
	// Output: 10s
}

// After: reconcile.Soonest takes any number of Results, with the same
// precedence: a requeue beats Done, the backoff beats any delay, the
// shortest delay wins.
func Example_resultSoonest() {
	certificate := reconcile.RequeueAfter(time.Hour)
	rollout := reconcile.RequeueAfter(10 * time.Second)
	fmt.Println(reconcile.Soonest(certificate, rollout, reconcile.Done()))
	fmt.Println(reconcile.Soonest(certificate, reconcile.RequeueWithBackoff()))
	// Output:
	// requeue after 10s
	// requeue with backoff
}
