// Package testenv starts and stops a local Kubernetes control plane (a real
// kube-apiserver and etcd) for tests and for local development.
//
// It wraps sigs.k8s.io/controller-runtime/pkg/envtest and adds what that
// package leaves to every project: finding binaries built offline, a clear
// error when they are missing, one control plane per test package, and a
// namespace per test.
//
//   - Binaries come from Options.BinaryDir, else KUBEBUILDER_ASSETS, else
//     bin/k8s/<Options.Version>/ under the nearest directory above the working
//     directory that holds a go.mod. hack/setup-envtest.sh (make envtest)
//     builds them there. Nothing is downloaded at run time.
//   - When a binary is missing, Start returns an error that wraps
//     ErrBinariesMissing and names the command that builds it.
//   - CRDs in Options.CRDDirs are installed and established before Start
//     returns; a directory that does not exist is an error.
//   - Main starts one control plane for a whole test package from TestMain
//     and stops it after the tests ran; Namespace gives each test its own.
//   - RestartAPIServer restarts kube-apiserver on the same port, certificates
//     and etcd, for tests of what an operator does across a restart.
//   - The control plane has no controllers: nothing garbage-collects owned
//     objects, and deleted namespaces stay Terminating. Tests that need that
//     behaviour must do it themselves.
package testenv
