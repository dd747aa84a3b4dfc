// Package testenv starts and stops a local Kubernetes control plane (a real
// kube-apiserver and etcd) for tests and for local development.
//
// It does what controller-runtime's pkg/envtest does, without importing it,
// and adds what that package leaves to every project: finding binaries
// built offline, a clear error when they are missing, one control plane per
// test package, a namespace per test, and reports of modified cached
// objects that name the test.
//
//   - Nothing is downloaded at run time: binaries come from
//     Options.BinaryDir (which says where it looks), ending with
//     SharedBinaryDir, which "opkit envtest" (make envtest) fills once per
//     machine. A missing binary fails Start with an error wrapping
//     ErrBinariesMissing that names the command that builds it.
//   - Any pinned Kubernetes version: Options.Version, else the one the
//     OPKIT_K8S_VERSION variable names (VersionEnv), else DefaultVersion;
//     "opkit envtest --version" builds it. The environment learns what the
//     server supports rather than assuming it (ServerVersion,
//     FeatureGate); Options.OptionalFeatureGates sets a gate only where
//     the server knows it, and RequireFeatureGate and RequireResource
//     skip a test, naming what the server lacks.
//   - CRDs in Options.CRDDirs are installed and served before Start
//     returns.
//   - Webhooks: Options.Webhook points a project's webhook configurations
//     and CRD conversion at the test's own server; Environment.Webhook
//     gives what manager.Options.Webhook needs. Webhooks with
//     failurePolicy Fail refuse the writes they match until the test's
//     manager serves them.
//   - One plane per test package: Main starts it from TestMain and stops
//     it after the tests; Namespace gives each test its own. Planes are
//     never shared across packages nor reused between Starts, so one
//     started with Options.FeatureGates always has them.
//   - Running as deployed: ApplyRBAC creates the ServiceAccounts, roles
//     and bindings a kustomize directory renders (config/default), and
//     nothing else; ServiceAccountConfig authenticates as one of them with
//     a TokenRequest token, and WriteKubeconfig writes a kubeconfig for it.
//   - RestartAPIServer restarts kube-apiserver on the same port,
//     certificates and etcd.
//   - Nothing outlives a test binary that dies before Stop (a panic, a
//     timeout, a kill): on Linux its kube-apiserver and etcd die with it,
//     and the next Start, in any process, removes the directories it left
//     (etcd's data alone is over 100 MB).
//   - The control plane has no controllers: nothing garbage-collects owned
//     objects, and deleted namespaces stay Terminating.
//   - Cached objects modified in place, and reads of kinds nobody
//     registered, fail the tests: Main turns on the cache's detectors
//     (OPKIT_CACHE_MUTATION_DETECTOR, OPKIT_CACHE_FAIL_UNREGISTERED_READS)
//     unless set.
//     ReportMutations and ReportUnregisteredReads fail the test at hand
//     instead of panicking; see package cache, "Finding who modified a
//     cached object". Leave client-go's KUBE_CACHE_MUTATION_DETECTOR off:
//     it panics on the same modification without the details.
//   - No global flags: importing testenv registers none. envtest's
//     dependencies register -kubeconfig from an init, which makes a test
//     binary that registers its own panic with "flag redefined".
package testenv
