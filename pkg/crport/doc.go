// Package crport runs controller-runtime code on opkit while it is being
// ported: a reconciler, a map function, predicates, kubebuilder's webhook
// paths and the manager's field indexer, each turned into what opkit's
// manager takes. It is what
// opkit init --from-kubebuilder wires a kubebuilder project's controllers
// and webhooks with (the "as is" path of the porting guide), and what a
// port by hand uses the same way.
//
// Each adapter keeps controller-runtime's meaning: a terminal error stays
// terminal, Requeue asks for a retry with backoff, a predicate sees the
// events it would have seen. Once a controller is ported to opkit's idioms
// (typed Listers, reconcile.Result, typed predicates) it needs none of
// this package.
//
// What has no adapter, such as a library that takes controller-runtime's
// manager (cert-controller's rotator), runs on a controller-runtime
// manager that opkit's hosts: ControllerRuntimeManager.
package crport
