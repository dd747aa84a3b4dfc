// Package testenv starts and stops a local Kubernetes control plane (a real
// kube-apiserver and etcd) for tests and for local development.
//
// It does what controller-runtime's pkg/envtest does, without importing it
// (see "The global flag set" below), and adds what that package leaves to
// every project: finding binaries built offline, a clear error when they are
// missing, one control plane per test package, a namespace per test, and
// reports of modified cached objects that name the test.
//
//   - Binaries come from Options.BinaryDir, else KUBEBUILDER_ASSETS, else
//     bin/k8s/<Options.Version>/ under the nearest directory above the working
//     directory that holds a go.mod, if it holds them, else the per-user
//     directory SharedBinaryDir ($XDG_CACHE_HOME/opkit/k8s/<version>),
//     which "opkit envtest" (make envtest, in opkit and in the projects it
//     scaffolds) builds them into from the Go module proxy, once for every
//     project on the machine. Nothing is downloaded at run time.
//   - When a binary is missing, Start returns an error that wraps
//     ErrBinariesMissing and names the command that builds it.
//   - CRDs in Options.CRDDirs are installed and served (discovery lists
//     them) before Start returns; a directory that does not exist is an
//     error.
//   - Webhooks: Options.Webhook installs webhook configurations (as
//     controller-gen writes them) and CRD conversion pointed at
//     https://127.0.0.1:<port><path>, with a CA Start made as caBundle;
//     Environment.Webhook gives the Host, Port and CertDir (tls.crt,
//     tls.key) for manager.Options.Webhook. Webhooks with failurePolicy
//     Fail refuse the writes they match until the test's manager serves
//     them. It does what envtest's WebhookInstallOptions do, without
//     importing envtest (see below).
//   - Main starts one control plane for a whole test package from TestMain
//     and stops it after the tests ran; Namespace gives each test its own.
//     Control planes are never shared across packages nor reused between
//     Starts: each Start launches its own kube-apiserver with its own
//     Options, so a package (or a test, calling Start itself) that needs a
//     feature gate never silently gets a plane without it.
//   - Options.FeatureGates sets kube-apiserver's --feature-gates, for
//     example ShardedListAndWatch for server-side shard selectors;
//     Environment.FeatureGates says what a plane was started with.
//   - RestartAPIServer restarts kube-apiserver on the same port, certificates
//     and etcd, for tests of what an operator does across a restart.
//   - The control plane has no controllers: nothing garbage-collects owned
//     objects, and deleted namespaces stay Terminating. Tests that need that
//     behaviour must do it themselves.
//
// # Modified cached objects
//
// Main sets OPKIT_CACHE_MUTATION_DETECTOR=true (cache.MutationDetectorEnv) unless
// it is set, which turns on opkit's cache mutation detector in every cache
// the tests make (see package cache, "Finding who modified a cached
// object"). Pass ReportMutations(t) as cache.Options.Mutations.OnMutation
// to have a modification fail t with the object's kind, namespace/name,
// changed fields and a diff; otherwise it panics with that message. Run the
// tests with OPKIT_CACHE_MUTATION_TRACE=1 to have the report say where the
// object was read:
//
//	OPKIT_CACHE_MUTATION_TRACE=1 go test -run TestMyReconciler ./...
//
// Leave client-go's detector (KUBE_CACHE_MUTATION_DETECTOR) off: it panics
// on the same modification from an informer goroutine, without the details.
//
// # Reads of unregistered kinds
//
// Main sets OPKIT_CACHE_FAIL_UNREGISTERED_READS=true (cache.UnregisteredReadsEnv)
// unless it is set, so that a read through the cached client of a kind
// nobody registered is reported even when the reader swallows its error:
// by default the test binary panics naming the kind, the registration to
// add and where it was read; pass ReportUnregisteredReads(t) as
// cache.Options.UnregisteredReads.OnRead to fail t instead.
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
