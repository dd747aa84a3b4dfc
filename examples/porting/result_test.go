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
