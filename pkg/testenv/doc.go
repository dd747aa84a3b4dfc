// Package testenv starts and stops a local Kubernetes control plane (a real
// kube-apiserver and etcd) for tests and for local development.
//
// It does what controller-runtime's pkg/envtest does, without importing it
// (see "The global flag set" below), and adds what that package leaves to
// every project: finding binaries built offline, a clear error when they are
// missing, one control plane per test package, and a namespace per test.
//
//   - Binaries come from Options.BinaryDir, else KUBEBUILDER_ASSETS, else
//     bin/k8s/<Options.Version>/ under the nearest directory above the working
//     directory that holds a go.mod. hack/setup-envtest.sh (make envtest)
//     builds them there. Nothing is downloaded at run time.
//   - When a binary is missing, Start returns an error that wraps
//     ErrBinariesMissing and names the command that builds it.
//   - CRDs in Options.CRDDirs are installed and served (discovery lists
//     them) before Start returns; a directory that does not exist is an
//     error.
//   - Main starts one control plane for a whole test package from TestMain
//     and stops it after the tests ran; Namespace gives each test its own.
//   - RestartAPIServer restarts kube-apiserver on the same port, certificates
//     and etcd, for tests of what an operator does across a restart.
//   - The control plane has no controllers: nothing garbage-collects owned
//     objects, and deleted namespaces stay Terminating. Tests that need that
//     behaviour must do it themselves.
//
// # The global flag set
//
// Importing testenv registers no flag on the global flag set. envtest
// imports controller-runtime's pkg/client/config, whose init registers
// -kubeconfig there, so a test binary whose own code registers -kubeconfig
// (as well-known controllers do) would panic with "flag redefined:
// kubeconfig" before TestMain. testenv therefore starts kube-apiserver and
// etcd itself (internal/plane).
package testenv
