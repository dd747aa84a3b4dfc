// Package porting holds the compiled examples that
// docs/porting-from-controller-runtime.md quotes: each idiom of
// controller-runtime beside its opkit counterpart.
//
// The examples live in a package of their own, not beside the packages
// they use, because a port touches many packages at once (manager, cache,
// owner, finalizer, status, conditions, reconcile, testenv) and reads best
// as one reconciler's code; and because they import controller-runtime's
// builder, manager and envtest for the "before" side, which no opkit
// package should import for its own examples. The package declares nothing:
// only its _test.go files matter, and test/docs checks that every Go block
// of the guide is a quote of one of them.
package porting
