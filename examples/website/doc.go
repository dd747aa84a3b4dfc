// Package website is one complete custom-resource controller on opkit,
// compiled and tested: a Website runs its image as a Deployment it owns,
// keeps a record of itself in another namespace, which its finalizer
// deletes, and reports a Ready condition with observedGeneration. It
// writes as a scaffolded project does: every object and status by
// server-side apply, through apply configurations.
//
//   - api/v1: the Website API, laid out as a scaffolded project's
//     api/<version> (controller-gen makes the deep copies, the apply
//     configurations in api/v1/applyconfiguration and config/crd from its
//     markers: make manifests).
//   - website.go: the controller, on opkit.
//   - website_controllerruntime_test.go: the same controller on
//     controller-runtime v0.25's builder, client.Apply and controllerutil,
//     for comparison; TestControllerNoLargerThanControllerRuntime keeps
//     website.go no longer than it, with no more imports and no more
//     mentions of each Kubernetes type.
//   - website_test.go: both controllers, run in turn on a local control
//     plane (pkg/testenv).
package website

// What both controllers share with their users.
const (
	// Finalizer holds a Website being deleted until its record is gone.
	Finalizer = "example.opkit.dev/record"
	// Records is the namespace of the Websites' records: a ConfigMap per
	// Website, named <namespace>.<name>. An owner reference cannot reach
	// across namespaces, so the finalizer deletes it.
	Records = "website-records"
)
