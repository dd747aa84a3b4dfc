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
