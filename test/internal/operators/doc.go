// Package operators runs operator binaries as processes against a test
// control plane, for the integration tests under test/ that compare the
// sample operator (cmd/sample-operator) with its controller-runtime twin
// (hack/bench/crmirror), and reads the files their --record-reconciles
// flag writes (package internal/actlog).
//
//   - Build compiles a command without the local control plane (-tags
//     nolocal), as it is deployed; Implementation builds it once per test.
//   - Start runs a binary with its metrics on a free loopback port and
//     kills it (after SIGCONT) when the test ends; Process says whether
//     and when it exited, and reads its /metrics and its log.
//   - ReadActs reads a record file whose writers have exited; LiveActs
//     one they may still be writing.
//
// Nothing here is safe for concurrent use unless its doc says so.
package operators
